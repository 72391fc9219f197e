import { hash } from 'node:crypto';
import { alignDown, assertNever, timeframeMs, type Job, type JobType, type UnitKind } from '@tickfleet/core';

const DAY_MS = 86_400_000;

/** How often each kind of job runs. */
export interface CadenceOptions {
  /**
   * Wait after a candle closes before collecting it: venues publish a closed candle a moment
   * after the boundary, and asking at the boundary returns it still open. @defaultValue 2000
   */
  closeDelayMs: number;
  /**
   * Spread of the per-job offset added to every due time, so the 500 `1m` jobs of a venue do not
   * all fall due in the same millisecond. The offset is a stable hash of the job id in
   * [0, jitterMs), capped at a tenth of the job's period: stable, so cadences never drift and a
   * rescan computes the same due time. @defaultValue 1000
   */
  jitterMs: number;
  /** Order-book polling period. @defaultValue 5000 */
  bookEveryMs: number;
  /** Trades polling period. @defaultValue 60000 */
  tradesEveryMs: number;
  /** Instrument discovery period. @defaultValue 3600000 */
  discoveryEveryMs: number;
  /** Daily files are fetched this long after the UTC day ends (publishers need time). @defaultValue 3600000 */
  filesDelayMs: number;
  /**
   * Economic series run once a day, this long after the UTC day starts: FRED publishes a day's
   * H.15 Treasury yields the next business day around 16:15 New York time (about 21:15 UTC in
   * winter), so the run finds the previous day's values. @defaultValue 79200000 (22 h)
   */
  seriesDelayMs: number;
}

export const DEFAULT_CADENCE: CadenceOptions = {
  closeDelayMs: 2000,
  jitterMs: 1000,
  bookEveryMs: 5000,
  tradesEveryMs: 60_000,
  discoveryEveryMs: 3_600_000,
  filesDelayMs: 3_600_000,
  seriesDelayMs: 22 * 3_600_000,
};

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
 * - candles: the close of the candle open at `nowMs`, plus `closeDelayMs`, plus jitter — aligned
 *   to the clock (weekly candles to Monday), so each run finds exactly the newly closed candle;
 * - daily files: the next UTC midnight plus `filesDelayMs` plus jitter; economic series the same
 *   with `seriesDelayMs`;
 * - book, trades, discovery: the next slot of a clock-aligned grid of their period, plus jitter.
 */
export function nextRunAt(job: Pick<Job, 'id' | 'type' | 'timeframe'>, nowMs: number, cadence: CadenceOptions): number {
  const period = periodMsOf(job, cadence);
  const jitter = jitterOf(job.id, period, cadence.jitterMs);
  if (job.type === 'ohlcv' && job.timeframe) {
    const next = alignDown(nowMs, job.timeframe) + period + cadence.closeDelayMs + jitter;
    // Claimed inside the delay after a close (the run that collects that candle): the next close.
    return next - period > nowMs ? next - period : next;
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
