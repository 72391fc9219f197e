import { setImmediate as nextTurn } from 'node:timers/promises';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { keyEnvelope } from '../records.js';
import { candles } from '../../test/fixtures/envelopes.js';
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
