import { setImmediate as nextTurn } from 'node:timers/promises';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { keyEnvelope } from '../records.js';
import type { Candle } from '@tickfleet/core';
import type { StoredCandle } from '../sink.js';
import { candles, T0, trades } from '../../test/fixtures/envelopes.js';
import { holdWriteLock } from '../../test/fixtures/sqlite-lock.js';
import { SqliteSink } from './sqlite-sink.js';

let dir: TempDir;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.remove());

describe('SqliteSink waiting for another writer', () => {
  it("waits for another connection's write lock without blocking the event loop, then stores the batch", async () => {
    const path = dir.file('data.db');
    // No retries of the sink's own: a failed or blocking attempt would settle the write at once.
    const sink = new SqliteSink(path, { busyTimeoutMs: 600_000, maxRetries: 0 });
    const lock = holdWriteLock(path);
    let settled = false;
    const write = sink.writeKeyed(candles([0, 1, 2, 3]).map(keyEnvelope)).finally(() => (settled = true));
    // Had the wait blocked (SQLite's own busy wait), these turns would run only after the write
    // gave up and settled; they run while it is still waiting for the lock.
    for (let i = 0; i < 20; i++) await nextTurn();
    expect(settled).toBe(false);
    expect(await sink.reader.countCandles({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' })).toMatchObject({ count: 0 });
    lock.release();
    expect(await write).toMatchObject({ inserted: 4, duplicates: 0 });
    await sink.close();
  });

  it('gives up after busyTimeoutMs with the busy error, storing nothing', async () => {
    const path = dir.file('data.db');
    const sink = new SqliteSink(path, { busyTimeoutMs: 50, maxRetries: 0 });
    const lock = holdWriteLock(path);
    try {
      await expect(sink.writeKeyed(candles([0]).map(keyEnvelope))).rejects.toThrow(/database is locked/);
    } finally {
      lock.release();
    }
    expect(await sink.reader.countCandles({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' })).toMatchObject({ count: 0 });
    await sink.close();
  });
});

describe('SqliteSink candle inserts', () => {
  it('stores every field of each candle once, across full multi-row statements, the rows left over, repeats and other channels in the same batch', async () => {
    const sink = new SqliteSink(dir.file('data.db'));
    const query = { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' as const };
    const minutes = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
    // 130 candles: two 50-row statements and 30 rows left over, with trades between them.
    const first = [...candles(minutes(0, 60)), ...trades(7), ...candles(minutes(60, 70))];
    expect(await sink.writeKeyed(first.map(keyEnvelope))).toMatchObject({ inserted: 137, duplicates: 0 });
    // 100 candles of which 40 are stored already, and a repeat inside one statement's rows.
    const second = [...candles(minutes(90, 100)), ...candles([150])];
    expect(await sink.writeKeyed(second.map(keyEnvelope))).toMatchObject({ inserted: 60, duplicates: 41 });
    const stored: StoredCandle[] = [];
    for await (const c of sink.reader.streamCandles(query)) stored.push(c);
    expect(stored.map((c) => c.openTime)).toEqual(minutes(0, 190).map((m) => T0 + m * 60_000));
    // Every column of a row lands in its own place, wherever the row sat in its statement.
    const expected = [...first, ...second].filter((e) => e.channel === 'candles');
    for (const c of stored) {
      const e = expected.find((x) => (x.payload as Candle).openTime === c.openTime)!;
      expect(c).toEqual({ ...(e.payload as Candle), trades: null, serverTimeMs: e.serverTimeMs ?? null, receivedAtMs: e.receivedAtMs });
    }
    expect(await sink.reader.countEnvelopes({ channel: 'trades' })).toBe(7);
    await sink.close();
  });
});
