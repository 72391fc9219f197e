import { z } from 'zod';
import { ValidationError } from './errors/validation-error.js';

/** Candle timeframes tickfleet collects; the order is shortest first. */
export const TIMEFRAMES = ['1m', '3m', '5m', '15m', '30m', '1h', '2h', '4h', '6h', '8h', '12h', '1d', '1w'] as const;

export const Timeframe = z.enum(TIMEFRAMES, {
  error: (issue) => `expected a timeframe (one of ${TIMEFRAMES.join(' ')}), got ${JSON.stringify(issue.input)}`,
});
export type Timeframe = z.infer<typeof Timeframe>;

const MINUTE_MS = 60_000;
const UNIT_MS: Record<string, number> = { m: MINUTE_MS, h: 60 * MINUTE_MS, d: 24 * 60 * MINUTE_MS, w: 7 * 24 * 60 * MINUTE_MS };

/** Length of one candle of `tf` in milliseconds. */
export function timeframeMs(tf: Timeframe): number {
  const n = Number(tf.slice(0, -1));
  const unit = UNIT_MS[tf.slice(-1)];
  // Types rule this out; a value from outside (JSON, Redis) that skipped parsing does not.
  if (unit === undefined) throw new ValidationError('timeframe', `one of ${TIMEFRAMES.join(' ')}`, tf);
  return n * unit;
}

/**
 * Open time of the candle containing `ms`. Weekly candles open on Monday 00:00 UTC (as Binance's do);
 * the Unix epoch was a Thursday, hence the 4-day offset.
 */
export function alignDown(ms: number, tf: Timeframe): number {
  const len = timeframeMs(tf);
  const offset = tf === '1w' ? 4 * 24 * 60 * MINUTE_MS : 0;
  return Math.floor((ms - offset) / len) * len + offset;
}

/**
 * How long after a candle closes it is collected: venues publish a closed candle a moment after
 * the boundary, and asking at the boundary returns it still open. The scheduler's due times and
 * the worker's "last closed candle" both wait this long unless configured otherwise.
 */
export const CANDLE_CLOSE_DELAY_MS = 2000;

/** Open time of the last candle that is closed at `nowMs` (its close time is <= now). */
export function lastClosedOpenTime(nowMs: number, tf: Timeframe): number {
  return alignDown(nowMs, tf) - timeframeMs(tf);
}

/** Whether `value` is one of TIMEFRAMES (a type guard; it throws nothing). */
export function isTimeframe(value: string): value is Timeframe {
  return (TIMEFRAMES as readonly string[]).includes(value);
}

/**
 * Splits [fromMs, toMs) into consecutive chunks of at most `candlesPerChunk` candles of `tf`,
 * aligned to candle open times: the unit plan of a backfill (one chunk = one page request).
 */
export function chunkRange(fromMs: number, toMs: number, tf: Timeframe, candlesPerChunk: number): Array<{ fromMs: number; toMs: number }> {
  if (!(candlesPerChunk >= 1)) throw new ValidationError('candlesPerChunk', 'a number >= 1', candlesPerChunk);
  const len = timeframeMs(tf);
  const step = len * Math.floor(candlesPerChunk);
  const chunks: Array<{ fromMs: number; toMs: number }> = [];
  const start = alignDown(fromMs, tf) + (alignDown(fromMs, tf) < fromMs ? len : 0);
  for (let t = start; t < toMs; t += step) chunks.push({ fromMs: t, toMs: Math.min(t + step, toMs) });
  return chunks;
}
