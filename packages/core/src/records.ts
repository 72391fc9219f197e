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
  return `${c.venue}:${c.symbol}:${c.timeframe}:${integerText(c.openTime)}`;
}

const NINE_ZEROS = '000000000';

/**
 * `String(n)`, for a millisecond timestamp about five times faster: V8 writes a number outside
 * its small-integer range (±2^30) with its general double-to-decimal routine (about 0.2 µs, a
 * fifth of a 1,000-candle page's key building), while both halves of `n` split at 10^9 are small
 * integers. Exact for every safe integer (`%` and the division of a multiple of 10^9 are exact in
 * doubles); anything else goes to `String`.
 */
function integerText(n: number): string {
  if (!(n >= 1e9 && n <= Number.MAX_SAFE_INTEGER) || !Number.isInteger(n)) return String(n);
  const low = n % 1e9;
  const lowText = String(low);
  return `${(n - low) / 1e9}${NINE_ZEROS.slice(lowText.length)}${lowText}`;
}

/**
 * The envelope of a closed candle: its candle key is the message id, so re-fetching a candle dedups
 * structurally. The candle itself is the payload (no copy: an adapter builds a fresh candle per
 * envelope, and a page is 1,000 of them).
 */
export function candleEnvelope(candle: Candle, receivedAtMs: number, serverTimeMs?: number): Envelope {
  return {
    v: 1,
    messageId: candleKey(candle),
    venue: candle.venue,
    channel: 'candles',
    symbol: candle.symbol,
    ...(serverTimeMs === undefined ? {} : { serverTimeMs }),
    receivedAtMs,
    payload: candle,
  };
}

export const BookLevel = z.tuple([z.string(), z.string()]);
export type BookLevel = z.infer<typeof BookLevel>;

/**
 * One order-book snapshot: `[price, size]` levels as decimal strings, best first. Sizes are in the
 * instrument's unit: the base asset on crypto venues, shares of the outcome token on prediction
 * markets (Limitless's millionths are converted by its adapter; docs/order-books.md).
 */
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

/**
 * A change of a venue's active order-book set (channel `markets`), written only when an
 * instrument joins (`listed`) or leaves (`retired`) the set: the market's metadata as discovery
 * saw it, and the version of the active-set snapshot the change belongs to.
 */
export const MarketRecord = z.object({
  venue: z.string(),
  /** The instrument (Polymarket: the outcome token id; Limitless: the market slug). */
  symbol: z.string(),
  event: z.enum(['listed', 'retired']),
  version: z.number().int().positive(),
  marketId: z.string(),
  slug: z.string().optional(),
  title: z.string().optional(),
  outcomes: z.array(z.string()),
  tokenIds: z.array(z.string()),
  /** The market's expiration (epoch ms), when the venue gives one. */
  expiresAtMs: z.number().int().nullable(),
  /** Why a retired instrument left the set. */
  reason: z.string().optional(),
});
export type MarketRecord = z.infer<typeof MarketRecord>;

/** The envelope of a membership change; one per (instrument, snapshot version, event), so a rerun dedups. */
export function marketEnvelope(record: MarketRecord, receivedAtMs: number): Envelope {
  return {
    v: 1,
    messageId: `${record.venue}:markets:${record.symbol}:${record.version}:${record.event}`,
    venue: record.venue,
    channel: 'markets',
    symbol: record.symbol,
    receivedAtMs,
    payload: { ...record },
  };
}

/** One worker's order-book polling statistics for one venue over one fixed interval (channel `poll_stats`, symbol = venue). */
export const PollStatsRecord = z.object({
  venue: z.string(),
  symbol: z.string(),
  workerId: z.string(),
  fromMs: z.number().int(),
  toMs: z.number().int(),
  activeInstruments: z.number().int().nonnegative(),
  activeVersion: z.number().int().nonnegative(),
  submitted: z.number().int().nonnegative(),
  ok: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  http4xx: z.number().int().nonnegative(),
  http5xx: z.number().int().nonnegative(),
  http429: z.number().int().nonnegative(),
  timeouts: z.number().int().nonnegative(),
  /** Failures with no HTTP status and no timeout (refused connection, malformed body, …). */
  otherErrors: z.number().int().nonnegative(),
  /** Latency percentiles over the rolling window of recent polls (null before the first). */
  p50LatencyMs: z.number().nonnegative().nullable(),
  p95LatencyMs: z.number().nonnegative().nullable(),
  cooldownRemainingMs: z.number().int().nonnegative(),
  inflightLimit: z.number().int().nonnegative(),
  /**
   * This worker's unit slots for the venue, its share of the cap (`ceil(cap / live workers)`): the
   * design's pool size (`workers`). Optional: records stored before it was kept have none.
   */
  poolSize: z.number().int().positive().optional(),
  /**
   * Book poll loop only (connector `bookLoop`): the shares this worker held at the interval's end,
   * the instruments in them, the books that came back unchanged (counted, not stored), the loop's
   * requests and the budget weight they spent, and the age of each instrument's newest snapshot at
   * the interval's end (p50, p95; null before the first).
   */
  loop: z
    .object({
      shares: z.array(z.number().int().nonnegative()),
      instruments: z.number().int().nonnegative(),
      unchanged: z.number().int().nonnegative(),
      requests: z.number().int().nonnegative(),
      weight: z.number().nonnegative(),
      cycles: z.number().int().nonnegative(),
      p50AgeMs: z.number().nonnegative().nullable(),
      p95AgeMs: z.number().nonnegative().nullable(),
    })
    .optional(),
  errorsSampled: z.number().int().nonnegative(),
  errorsSuppressed: z.number().int().nonnegative(),
});
export type PollStatsRecord = z.infer<typeof PollStatsRecord>;

/** A sampled failed order-book poll (channel `poll_errors`, symbol = the instrument). */
export const PollErrorRecord = z.object({
  venue: z.string(),
  symbol: z.string(),
  marketId: z.string().optional(),
  slug: z.string().optional(),
  status: z.number().int().optional(),
  latencyMs: z.number().nonnegative(),
  errorType: z.string(),
  /** The error message, cut to {@link POLL_ERROR_MESSAGE_MAX} characters. */
  message: z.string(),
});
export type PollErrorRecord = z.infer<typeof PollErrorRecord>;

/**
 * A break or recovery of a stream (channel `stream_events`, symbol = the instrument): a trade-id
 * gap found, healed from REST or left unhealed (ids inclusive), or an order book resynchronised.
 */
export const StreamEventRecord = z.object({
  venue: z.string(),
  symbol: z.string(),
  stream: z.string(),
  workerId: z.string(),
  event: z.enum(['gap', 'healed', 'unhealed', 'resync', 'checksum-mismatch']),
  fromId: z.number().int().optional(),
  toId: z.number().int().optional(),
  reason: z.string().optional(),
  restCalls: z.number().int().nonnegative().optional(),
  atMs: z.number().int(),
});
export type StreamEventRecord = z.infer<typeof StreamEventRecord>;

/** Longest message a poll-error record keeps. */
export const POLL_ERROR_MESSAGE_MAX = 300;

const Decimal = z.string().regex(/^-?\d+(\.\d+)?(e-?\d+)?$/i, 'expected a decimal string');

/**
 * One contract of an option-chain snapshot. Prices and greeks are decimal strings (as candles
 * keep them), null where the venue gave none; `impliedVolatility` is in percent, as Finnhub sends
 * it (26.93 means 26.93 %). `quoteTimeMs` is when the venue last updated the contract's quote.
 */
export const OptionContract = z.object({
  venue: z.string(),
  /** The underlier, e.g. `AAPL`. */
  symbol: z.string(),
  /** The contract's name at the venue (OCC symbol), e.g. `AAPL240621C00190000`. */
  contract: z.string().min(1),
  side: z.enum(['call', 'put']),
  /** Expiration date, `YYYY-MM-DD`. */
  expiration: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD'),
  strike: Decimal,
  quoteTimeMs: z.number().int(),
  bid: Decimal.nullable(),
  ask: Decimal.nullable(),
  last: Decimal.nullable(),
  volume: z.number().int().nonnegative().nullable(),
  openInterest: z.number().int().nonnegative().nullable(),
  impliedVolatility: Decimal.nullable(),
  delta: Decimal.nullable(),
  gamma: Decimal.nullable(),
  theta: Decimal.nullable(),
  vega: Decimal.nullable(),
  rho: Decimal.nullable(),
});
export type OptionContract = z.infer<typeof OptionContract>;

/**
 * Deterministic key of one contract in one snapshot: `venue:contract:quoteTimeMs`. Fetching a chain
 * whose quotes have not changed again (a re-run, a retry) yields the same keys and stores nothing
 * twice; a contract whose quote moved is a new snapshot of it.
 */
export function optionContractKey(c: Pick<OptionContract, 'venue' | 'contract' | 'quoteTimeMs'>): string {
  return `${c.venue}:${c.contract}:${c.quoteTimeMs}`;
}

/** The envelope of one contract of an option-chain snapshot (channel `options`, symbol = the underlier). */
export function optionContractEnvelope(contract: OptionContract, receivedAtMs: number): Envelope {
  return {
    v: 1,
    messageId: optionContractKey(contract),
    venue: contract.venue,
    channel: 'options',
    symbol: contract.symbol,
    serverTimeMs: contract.quoteTimeMs,
    receivedAtMs,
    payload: { ...contract },
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
