import type { Collection, Document, Filter } from 'mongodb';
import { timeframeMs, type Envelope } from '@tickfleet/core';
import type { CandleQuery, CandleSummary, DataReader, EnvelopeQuery, Interval, StoredCandle } from '../sink.js';

const PAGE = 1000;

/** Range reads over the MongoDB sink's collections, paged by key so no cursor outlives a page. */
export class MongoDataReader implements DataReader {
  constructor(
    private readonly envelopes: Collection<Document>,
    private readonly candles: Collection<Document>,
    private readonly errors: Collection<Document>,
    /** Resolves once the client is connected (see MongoSink.connect). */
    private readonly ready: () => Promise<void>,
  ) {}

  async countCandles(q: CandleQuery): Promise<CandleSummary> {
    await this.ready();
    const filter = candleFilter(q);
    const count = await this.candles.countDocuments(filter);
    if (count === 0) return { count, firstOpenTime: null, lastOpenTime: null };
    const first = await this.candles
      .find(filter, { projection: { openTime: 1 } })
      .sort({ openTime: 1 })
      .limit(1)
      .toArray();
    const last = await this.candles
      .find(filter, { projection: { openTime: 1 } })
      .sort({ openTime: -1 })
      .limit(1)
      .toArray();
    return { count, firstOpenTime: (first[0]?.openTime as number | undefined) ?? null, lastOpenTime: (last[0]?.openTime as number | undefined) ?? null };
  }

  async *streamCandles(q: CandleQuery): AsyncIterable<StoredCandle> {
    await this.ready();
    let fromMs = q.fromMs;
    for (;;) {
      const docs = await this.candles
        .find(candleFilter({ ...q, ...(fromMs === undefined ? {} : { fromMs }) }))
        .sort({ openTime: 1 })
        .limit(PAGE)
        .toArray();
      for (const d of docs) {
        yield {
          venue: d.venue as string,
          symbol: d.symbol as string,
          timeframe: d.timeframe as StoredCandle['timeframe'],
          openTime: d.openTime as number,
          open: d.open as string,
          high: d.high as string,
          low: d.low as string,
          close: d.close as string,
          volume: d.volume as string,
          trades: (d.trades as number | null | undefined) ?? null,
          receivedAtMs: d.receivedAtMs as number,
          serverTimeMs: (d.serverTimeMs as number | null | undefined) ?? null,
        };
      }
      const last = docs[docs.length - 1];
      if (docs.length < PAGE || !last) return;
      fromMs = (last.openTime as number) + 1;
    }
  }

  async missingIntervals(q: CandleQuery): Promise<Interval[]> {
    await this.ready();
    const tfMs = timeframeMs(q.timeframe);
    const out: Interval[] = [];
    let prev: number | undefined;
    let fromMs = q.fromMs;
    // Open times only, in pages: the same walk the SQLite reader does with LAG().
    for (;;) {
      const docs = await this.candles
        .find(candleFilter({ ...q, ...(fromMs === undefined ? {} : { fromMs }) }), { projection: { _id: 0, openTime: 1 } })
        .sort({ openTime: 1 })
        .limit(PAGE * 10)
        .toArray();
      for (const d of docs) {
        const t = d.openTime as number;
        if (prev !== undefined && t - prev > tfMs) out.push({ fromMs: prev + tfMs, toMs: t });
        prev = t;
      }
      if (docs.length < PAGE * 10 || prev === undefined) return out;
      fromMs = prev + 1;
    }
  }

  async countEnvelopes(q: EnvelopeQuery): Promise<number> {
    await this.ready();
    return this.envelopes.countDocuments(envelopeFilter(q));
  }

  async *streamEnvelopes(q: EnvelopeQuery): AsyncIterable<{ key: string; envelope: Envelope }> {
    await this.ready();
    let after: { ms: number; key: string } | undefined;
    for (;;) {
      const base = envelopeFilter(q);
      const filter: Filter<Document> = after
        ? ({ $and: [base, { $or: [{ receivedAtMs: { $gt: after.ms } }, { receivedAtMs: after.ms, _id: { $gt: after.key } }] }] } as Filter<Document>)
        : base;
      const docs = await this.envelopes.find(filter).sort({ receivedAtMs: 1, _id: 1 }).limit(PAGE).toArray();
      for (const d of docs) {
        const { _id, ...envelope } = d;
        yield { key: String(_id), envelope: envelope as unknown as Envelope };
      }
      const last = docs[docs.length - 1];
      if (docs.length < PAGE || !last) return;
      after = { ms: last.receivedAtMs as number, key: String(last._id) };
    }
  }

  async countErrors(): Promise<number> {
    await this.ready();
    return this.errors.countDocuments({});
  }
}

function candleFilter(q: CandleQuery): Filter<Document> {
  const openTime: Record<string, number> = {};
  if (q.fromMs !== undefined) openTime.$gte = q.fromMs;
  if (q.toMs !== undefined) openTime.$lt = q.toMs;
  return { venue: q.venue, symbol: q.symbol, timeframe: q.timeframe, ...(Object.keys(openTime).length ? { openTime } : {}) };
}

function envelopeFilter(q: EnvelopeQuery): Filter<Document> {
  const f: Filter<Document> = {};
  if (q.venue !== undefined) f.venue = q.venue;
  if (q.channel !== undefined) f.channel = q.channel;
  if (q.symbol !== undefined) f.symbol = q.symbol;
  const range: Record<string, number> = {};
  if (q.fromMs !== undefined) range.$gte = q.fromMs;
  if (q.toMs !== undefined) range.$lt = q.toMs;
  if (Object.keys(range).length) f.receivedAtMs = range;
  return f;
}
