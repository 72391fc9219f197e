import { hash } from 'node:crypto';
import { assertNever, calendarFor, CANDLE_CLOSE_DELAY_MS, timeframeMs, type Job, type JobType, type UnitKind } from '@tickfleet/core';

const DAY_MS = 86_400_000;

/** How often each kind of job runs. */
export interface CadenceOptions {
  /** Wait after a candle closes before collecting it ({@link CANDLE_CLOSE_DELAY_MS}). @defaultValue {@link CADENCE_DEFAULTS.closeDelayMs} */
  closeDelayMs: number;
  /**
   * Spread of the per-job offset added to every due time, so the 500 `1m` jobs of a venue do not
   * all fall due in the same millisecond. The offset is a stable hash of the job id in
   * [0, jitterMs), capped at a tenth of the job's period: stable, so cadences never drift and a
   * rescan computes the same due time. @defaultValue {@link CADENCE_DEFAULTS.jitterMs}
   */
  jitterMs: number;
  /** Order-book polling period. @defaultValue {@link CADENCE_DEFAULTS.bookEveryMs} */
  bookEveryMs: number;
  /** Trades polling period. @defaultValue {@link CADENCE_DEFAULTS.tradesEveryMs} */
  tradesEveryMs: number;
  /** Instrument discovery period. @defaultValue {@link CADENCE_DEFAULTS.discoveryEveryMs} */
  discoveryEveryMs: number;
  /** Option-chain cycle: each cycle of an `options` job refreshes its next `perCycle` underliers. @defaultValue {@link CADENCE_DEFAULTS.optionsEveryMs} */
  optionsEveryMs: number;
  /** Daily files are fetched this long after the UTC day ends (publishers need time). @defaultValue {@link CADENCE_DEFAULTS.filesDelayMs} */
  filesDelayMs: number;
  /**
   * Economic series run once a day, this long after the UTC day starts: FRED publishes a day's
   * H.15 Treasury yields the next business day around 16:15 New York time (about 21:15 UTC in
   * winter), so the run finds the previous day's values. @defaultValue {@link CADENCE_DEFAULTS.seriesDelayMs}
   */
  seriesDelayMs: number;
}

/** Defaults of the cadences: the scheduler's options and its environment schema take them from here. */
export const CADENCE_DEFAULTS: Readonly<CadenceOptions> = Object.freeze({
  closeDelayMs: CANDLE_CLOSE_DELAY_MS,
  jitterMs: 1000,
  bookEveryMs: 5000,
  tradesEveryMs: 60_000,
  discoveryEveryMs: 3_600_000,
  optionsEveryMs: 60_000,
  filesDelayMs: 3_600_000,
  seriesDelayMs: 22 * 3_600_000,
});

/** The unit kind a job's runs take. */
export function unitKindFor(type: JobType): Exclude<UnitKind, 'backfill'> {
  switch (type) {
    case 'ohlcv':
    case 'trades':
      return 'incremental';
    case 'book':
      return 'book-poll';
    case 'files':
      return 'daily-files';
    case 'discovery':
      return 'discovery';
    case 'options':
      return 'option-chain';
    case 'series':
      return 'series';
    default:
      return assertNever(type, 'job type');
  }
}

/** The period of a job's cadence in ms. */
export function periodMsOf(job: Pick<Job, 'type' | 'timeframe'>, cadence: CadenceOptions): number {
  switch (job.type) {
    case 'ohlcv':
      return job.timeframe ? timeframeMs(job.timeframe) : 60_000;
    case 'book':
      return cadence.bookEveryMs;
    case 'trades':
      return cadence.tradesEveryMs;
    case 'discovery':
      return cadence.discoveryEveryMs;
    case 'files':
    case 'series':
      return DAY_MS;
    case 'options':
      return cadence.optionsEveryMs;
    default:
      return assertNever(job.type, 'job type');
  }
}

/**
 * The stable jitter of a job: the first 32 bits of sha256 over its id as a JSON string (what
 * core's `stableHash(jobId)` hashes) mapped into [0, min(jitterMs, period / 10)). Node's one-shot
 * `hash` computes the same value at half the cost of a Hash object, which counts when a tick
 * computes 100 000 due times.
 */
export function jitterOf(jobId: string, periodMs: number, jitterMs: number): number {
  const span = Math.floor(Math.min(jitterMs, periodMs / 10));
  if (span <= 0) return 0;
  return (hash('sha256', JSON.stringify(jobId), 'buffer') as Buffer).readUInt32BE(0) % span;
}

/**
 * When a job that ran (was claimed) at `nowMs` is next due.
 * - candles: the next instant a candle becomes final by the venue's trading calendar, plus
 *   `closeDelayMs`, plus jitter, so each run finds exactly the newly final candle: on 24/7 venues
 *   the close of the candle open at `nowMs` (aligned to the clock, weekly candles to Monday); on
 *   US equities day bars after each session's after-hours, intraday candles only while sessions
 *   trade (no runs over nights, weekends and holidays);
 * - daily files: the next UTC midnight plus `filesDelayMs` plus jitter; economic series the same
 *   with `seriesDelayMs`;
 * - book, trades, discovery, options: the next slot of a clock-aligned grid of their period, plus jitter.
 */
export function nextRunAt(job: Pick<Job, 'id' | 'venue' | 'type' | 'timeframe'>, nowMs: number, cadence: CadenceOptions): number {
  const period = periodMsOf(job, cadence);
  const jitter = jitterOf(job.id, period, cadence.jitterMs);
  if (job.type === 'ohlcv' && job.timeframe) {
    // Counted from `now - delay - jitter`: claimed inside the delay after a close (the run that
    // collects that candle), that close's run is next, not the one after.
    return calendarFor(job.venue).nextFinalAt(job.timeframe, nowMs - cadence.closeDelayMs - jitter) + cadence.closeDelayMs + jitter;
  }
  const delay = job.type === 'files' ? cadence.filesDelayMs : job.type === 'series' ? cadence.seriesDelayMs : 0;
  const slot = Math.floor((nowMs - delay - jitter) / period) * period + delay + jitter;
  return slot + period;
}

/** The previous complete UTC day before `nowMs - filesDelayMs`: the range a daily-files unit fetches. */
export function dailyFilesRange(nowMs: number, cadence: CadenceOptions): { fromMs: number; toMs: number } {
  const toMs = Math.floor((nowMs - cadence.filesDelayMs) / DAY_MS) * DAY_MS;
  return { fromMs: toMs - DAY_MS, toMs };
}
