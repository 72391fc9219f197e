import { z } from 'zod';
import type { Envelope } from './envelope.js';
import { Timeframe } from './timeframe.js';

/** A closed OHLCV candle. Prices and volumes are decimal strings, as venues send them, to keep precision. */
export const Candle = z.object({
  venue: z.string(),
  symbol: z.string(),
  timeframe: Timeframe,
  openTime: z.number().int(),
  open: z.string(),
  high: z.string(),
  low: z.string(),
  close: z.string(),
  volume: z.string(),
  trades: z.number().int().nonnegative().optional(),
});
export type Candle = z.infer<typeof Candle>;

/** Deterministic candle key: `venue:symbol:timeframe:openTime`. */
export function candleKey(c: Pick<Candle, 'venue' | 'symbol' | 'timeframe' | 'openTime'>): string {
  return `${c.venue}:${c.symbol}:${c.timeframe}:${c.openTime}`;
}

/** The envelope of a closed candle: its candle key is the message id, so re-fetching a candle dedups structurally. */
export function candleEnvelope(candle: Candle, receivedAtMs: number, serverTimeMs?: number): Envelope {
  return {
    v: 1,
    messageId: candleKey(candle),
    venue: candle.venue,
    channel: 'candles',
    symbol: candle.symbol,
    ...(serverTimeMs === undefined ? {} : { serverTimeMs }),
    receivedAtMs,
    payload: { ...candle },
  };
}

export const BookLevel = z.tuple([z.string(), z.string()]);
export type BookLevel = z.infer<typeof BookLevel>;

/** One order-book snapshot: price/size levels, best first. */
export const BookSnapshot = z.object({
  venue: z.string(),
  symbol: z.string(),
  timeMs: z.number().int(),
  sequence: z.number().int().optional(),
  bids: z.array(BookLevel),
  asks: z.array(BookLevel),
});
export type BookSnapshot = z.infer<typeof BookSnapshot>;

export const Trade = z.object({
  venue: z.string(),
  symbol: z.string(),
  tradeId: z.string(),
  timeMs: z.number().int(),
  price: z.string(),
  size: z.string(),
  side: z.enum(['buy', 'sell']).optional(),
  currency: z.string().optional(),
});
export type Trade = z.infer<typeof Trade>;

/**
 * The envelope of an order-book snapshot. The adapter names the message id (a venue's book
 * sequences are per symbol while `seq:` dedup keys are per venue and channel, so each venue keys
 * snapshots by symbol and sequence or time); `serverTimeMs` only when the venue stamped the
 * snapshot itself; `extra` joins the payload (venue fields worth keeping).
 */
export function bookEnvelope(
  book: BookSnapshot,
  messageId: string,
  receivedAtMs: number,
  serverTimeMs?: number,
  extra: Record<string, unknown> = {},
): Envelope {
  return {
    v: 1,
    messageId,
    ...(book.sequence === undefined ? {} : { sequence: book.sequence }),
    venue: book.venue,
    channel: 'book',
    symbol: book.symbol,
    ...(serverTimeMs === undefined ? {} : { serverTimeMs }),
    receivedAtMs,
    payload: { ...book, ...extra },
  };
}

/**
 * The envelope of a trade. Trade ids are unique per venue and symbol (or market) only, and `mid:`
 * dedup keys are global, so the adapter's message id carries that scope. `source`, when given, is
 * the venue's raw record, kept in the payload.
 */
export function tradeEnvelope(trade: Trade, messageId: string, receivedAtMs: number, source?: Record<string, unknown>): Envelope {
  return {
    v: 1,
    messageId,
    venue: trade.venue,
    channel: 'trades',
    symbol: trade.symbol,
    serverTimeMs: trade.timeMs,
    receivedAtMs,
    payload: source === undefined ? { ...trade } : { ...trade, source },
  };
}

const IsoDay = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD');

/**
 * One observation of an economic series as published during one real-time period (a FRED/ALFRED
 * vintage). `symbol` is the series id (`DGS10`); `date` the observation date; `value` null where
 * the publisher has no value for the date (FRED's `"."`, e.g. a bond-market holiday in a daily
 * series), never 0. `realtimeStart`/`realtimeEnd` bound the period in which this value was the
 * published one (`9999-12-31`: still current); `units` is the publisher's units key (`lin`).
 */
export const SeriesObservation = z.object({
  venue: z.string(),
  symbol: z.string(),
  date: IsoDay,
  value: z.number().finite().nullable(),
  realtimeStart: IsoDay,
  realtimeEnd: IsoDay,
  units: z.string().min(1),
});
export type SeriesObservation = z.infer<typeof SeriesObservation>;

/**
 * Deterministic observation key: `venue:symbol:date:realtimeStart`. Fetching the same vintage
 * again yields the same key (stored once); a revision is published with a new `realtimeStart`, so
 * it is a new record next to the value it revised. The key leaves out `realtimeEnd`: a vintage
 * stored while current keeps the `9999-12-31` it was stored with when a later revision ends it
 * (the revision's own record says from when it applies).
 */
export function seriesObservationKey(o: Pick<SeriesObservation, 'venue' | 'symbol' | 'date' | 'realtimeStart'>): string {
  return `${o.venue}:${o.symbol}:${o.date}:${o.realtimeStart}`;
}

/** The envelope of a series observation (channel `series`): its observation key is the message id. */
export function seriesEnvelope(observation: SeriesObservation, receivedAtMs: number): Envelope {
  return {
    v: 1,
    messageId: seriesObservationKey(observation),
    venue: observation.venue,
    channel: 'series',
    symbol: observation.symbol,
    receivedAtMs,
    payload: { ...observation },
  };
}
