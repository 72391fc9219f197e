import { tempDir, type TempDir } from '@tickfleet/testkit';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { optionContractEnvelope, seriesEnvelope, ValidationError, type SeriesObservation } from '@tickfleet/core';
import { keyEnvelope, ReplayWorker, Spool, openSink, type Sink } from './index.js';
import { candles, trades, books, T0 } from '../test/fixtures/envelopes.js';
import { mongoTarget, type MongoTarget } from '../test/fixtures/mongo.js';

interface Adapter {
  name: string;
  open(dir: TempDir): Promise<Sink>;
  /** Records stored, counted independently of the sink's own counters. */
  stored(sink: Sink, dir: TempDir): Promise<number>;
}

let mongo: MongoTarget | undefined;
beforeAll(async () => {
  mongo = await mongoTarget();
});
afterAll(async () => {
  await mongo?.stop();
});

async function countViaReader(sink: Sink): Promise<number> {
  const r = sink.reader!;
  const c = await r.countCandles({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' });
  return c.count + (await r.countEnvelopes({}));
}

const adapters: Adapter[] = [
  { name: 'sqlite', open: (d) => openSink(d.sqliteUrl('data.db'), { sqlite: { maxRetries: 0 } }), stored: countViaReader },
  {
    name: 'jsonl',
    open: (d) => openSink(`jsonl://${d.file('jsonl')}`),
    stored: async (_sink, d) => {
      let n = 0;
      const root = d.file('jsonl');
      // <root>/<venue>/<stream>/date=…/part-*.jsonl[.open]
      for (const venue of readdirSync(root))
        for (const stream of readdirSync(join(root, venue)).filter((s) => s !== 'errors'))
          for (const part of readdirSync(join(root, venue, stream)))
            for (const f of readdirSync(join(root, venue, stream, part)).filter((f) => f.startsWith('part-')))
              n += readFileSync(join(root, venue, stream, part, f), 'utf8')
                .split('\n')
                .filter(Boolean).length;
      return n;
    },
  },
  {
    name: 'mongodb',
    open: async () => {
      if (!mongo) throw new Error('no MongoDB target');
      return openSink(mongo.url(), { mongodb: { maxRetries: 0 } });
    },
    stored: countViaReader,
  },
];

// The MongoDB adapter runs against MONGO_URL or the in-repo wire server (when present).

describe.each(adapters)('$name sink contract', (adapter) => {
  let dir: TempDir;
  let sink: Sink;
  beforeEach(async () => {
    dir = tempDir();
    sink = await adapter.open(dir);
  });
  afterEach(async () => {
    await sink.close();
    dir.remove();
  });

  it('stores a mixed batch once: writing it again only counts duplicates', async () => {
    const batch = [...trades(50), ...candles([0, 1, 2, 3]), ...books(5)];
    expect(await sink.write(batch)).toEqual({ inserted: 59, duplicates: 0, rejected: [] });
    expect(await sink.write(batch)).toEqual({ inserted: 0, duplicates: 59, rejected: [] });
    const overlapping = [...trades(10, 45)];
    expect(await sink.write(overlapping)).toEqual({ inserted: 5, duplicates: 5, rejected: [] });
    expect(await adapter.stored(sink, dir)).toBe(64);
    expect(sink.state).toBe('ok');
  });

  it('writeKeyed stores pre-validated keyed records like write, under the same keys', async () => {
    const batch = [...trades(20), ...candles([0, 1]), ...books(3)];
    const keyed = batch.map((raw) => keyEnvelope(raw));
    expect(await sink.writeKeyed(keyed)).toEqual({ inserted: 25, duplicates: 0, rejected: [] });
    expect(await sink.write(batch)).toEqual({ inserted: 0, duplicates: 25, rejected: [] });
    expect(await adapter.stored(sink, dir)).toBe(25);
  });

  it('replaying the same spool segment twice leaves one copy of each record', async () => {
    const records = [...trades(40), ...candles([0, 1, 2]), ...books(4)];
    for (let round = 0; round < 2; round++) {
      const spool = Spool.open({ dir: dir.file('spool') });
      await spool.append(records);
      const r = await new ReplayWorker(spool, sink, { batchSize: 16 }).drain();
      expect(r).toMatchObject({ segments: 1, records: 47, inserted: round === 0 ? 47 : 0, duplicates: round === 0 ? 0 : 47 });
      await spool.close();
    }
    expect(await adapter.stored(sink, dir)).toBe(47);
  });

  it('stores each option contract of a snapshot once, refuses a message id that is not the contract key', async () => {
    const snapshot = (quoteTimeMs: number) =>
      (['call', 'put'] as const).map((side) =>
        optionContractEnvelope(
          {
            venue: 'finnhub',
            symbol: 'AAPL',
            contract: `AAPL240126${side === 'call' ? 'C' : 'P'}00190000`,
            side,
            expiration: '2024-01-26',
            strike: '190',
            quoteTimeMs,
            bid: '1.2',
            ask: '1.3',
            last: null,
            volume: 10,
            openInterest: null,
            impliedVolatility: '24.5',
            delta: side === 'call' ? '0.5' : '-0.5',
            gamma: null,
            theta: null,
            vega: null,
            rho: null,
          },
          quoteTimeMs + 5,
        ),
      );
    expect(await sink.write(snapshot(T0))).toEqual({ inserted: 2, duplicates: 0, rejected: [] });
    // The same chain fetched again (a re-run) is the same snapshot; a moved quote is a new one.
    expect(await sink.write(snapshot(T0))).toEqual({ inserted: 0, duplicates: 2, rejected: [] });
    expect(await sink.write(snapshot(T0 + 60_000))).toEqual({ inserted: 2, duplicates: 0, rejected: [] });
    const wrongKey = { ...snapshot(T0 + 120_000)[0]!, messageId: 'finnhub:other' };
    const res = await sink.write([wrongKey]);
    expect(res.rejected.map((r) => r.error.field)).toEqual(['envelope.messageId']);
    expect(await adapter.stored(sink, dir)).toBe(4);
  });

  it('rejects a malformed record naming the field and stores the rest of its batch', async () => {
    const good = trades(3);
    const badCandle = { ...candles([9])[0]!, payload: { ...candles([9])[0]!.payload, openTime: 'yesterday' } };
    const res = await sink.write([good[0], { ...good[1]!, venue: 'Bad Venue' }, good[2], badCandle]);
    expect(res.inserted).toBe(2);
    expect(res.rejected.map((r) => r.index)).toEqual([1, 3]);
    expect(res.rejected[0]!.error).toBeInstanceOf(ValidationError);
    expect(res.rejected[0]!.error.field).toBe('envelope.venue');
    expect(res.rejected[1]!.error.field).toBe('envelope.payload.openTime');
    expect(await adapter.stored(sink, dir)).toBe(2);
  });

  it('stores each series vintage once, null kept null; a revision is a record of its own; a wrong key is refused', async () => {
    const obs = (date: string, value: number | null, realtimeStart: string): SeriesObservation => ({
      venue: 'fred',
      symbol: 'DGS10',
      date,
      value,
      realtimeStart,
      realtimeEnd: '9999-12-31',
      units: 'lin',
    });
    const first = [obs('2024-07-03', 4.36, '2024-07-05'), obs('2024-07-04', null, '2024-07-05'), obs('2024-07-05', 0, '2024-07-08')].map((o) =>
      seriesEnvelope(o, T0),
    );
    expect(await sink.write(first)).toEqual({ inserted: 3, duplicates: 0, rejected: [] });
    expect(await sink.write(first)).toEqual({ inserted: 0, duplicates: 3, rejected: [] });
    const revision = seriesEnvelope(obs('2024-07-03', 4.4, '2024-08-01'), T0 + 1);
    const wrongKey = { ...seriesEnvelope(obs('2024-07-08', 4.3, '2024-07-09'), T0), messageId: 'fred:DGS10:2024-07-08' };
    const res = await sink.write([revision, wrongKey]);
    expect(res.inserted).toBe(1);
    expect(res.rejected.map((r) => r.error.field)).toEqual(['envelope.messageId']);
    expect(await adapter.stored(sink, dir)).toBe(4);
    if (sink.reader) {
      const values: Array<[string, number | null]> = [];
      for await (const { envelope } of sink.reader.streamEnvelopes({ venue: 'fred', channel: 'series', symbol: 'DGS10' })) {
        const o = envelope.payload as SeriesObservation;
        values.push([o.date, o.value]);
      }
      expect(values.sort()).toEqual([
        ['2024-07-03', 4.36],
        ['2024-07-03', 4.4],
        ['2024-07-04', null],
        ['2024-07-05', 0],
      ]);
    }
  });

  if (adapter.name !== 'jsonl') {
    it('reads candles back: count, first/last, range stream and missing intervals', async () => {
      await sink.write(candles([0, 1, 2, 5, 6, 9, 10]));
      const r = sink.reader!;
      const q = { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' as const };
      expect(await r.countCandles(q)).toEqual({ count: 7, firstOpenTime: T0, lastOpenTime: T0 + 10 * 60_000 });
      expect(await r.countCandles({ ...q, fromMs: T0 + 2 * 60_000, toMs: T0 + 9 * 60_000 })).toEqual({
        count: 3,
        firstOpenTime: T0 + 2 * 60_000,
        lastOpenTime: T0 + 6 * 60_000,
      });
      const streamed = [];
      for await (const c of r.streamCandles({ ...q, fromMs: T0 + 60_000 })) streamed.push(c);
      expect(streamed.map((c) => (c.openTime - T0) / 60_000)).toEqual([1, 2, 5, 6, 9, 10]);
      expect(streamed[0]).toMatchObject({ open: '1', high: '2', low: '0.5', close: '1.5', volume: '1', timeframe: '1m' });
      expect(await r.missingIntervals(q)).toEqual([
        { fromMs: T0 + 3 * 60_000, toMs: T0 + 5 * 60_000 },
        { fromMs: T0 + 7 * 60_000, toMs: T0 + 9 * 60_000 },
      ]);
      expect(await r.countCandles({ ...q, symbol: 'ETH/USDT' })).toEqual({ count: 0, firstOpenTime: null, lastOpenTime: null });
    });

    it('streams envelopes of a channel in receive order and samples errors', async () => {
      await sink.write([...trades(1200).reverse(), ...books(3)]);
      const keys: string[] = [];
      for await (const e of sink.reader!.streamEnvelopes({ venue: 'binance', channel: 'trades' })) keys.push(e.envelope.payload.tradeId as string);
      expect(keys).toEqual(Array.from({ length: 1200 }, (_, i) => String(i)));
      expect(await sink.reader!.countEnvelopes({ channel: 'book' })).toBe(3);
      await sink.writeErrors([{ atMs: T0, venue: 'binance', channel: 'trades', field: 'envelope.payload.price', message: 'x', sample: '{}' }]);
      expect(await sink.reader!.countErrors()).toBe(1);
    });
  } else {
    it('has no reader, and writes the errors stream as files', async () => {
      expect(sink.reader).toBeUndefined();
      await sink.writeErrors([{ atMs: T0, venue: 'binance', channel: 'trades', field: 'envelope.payload.price', message: 'x', sample: '{}' }]);
      await sink.close();
      const files = readdirSync(dir.file('jsonl/binance/errors/date=2024-01-01'));
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\.jsonl$/);
    });
  }
});
