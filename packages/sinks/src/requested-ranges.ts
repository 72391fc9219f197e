import { alignDown, jobId, type Timeframe } from '@tickfleet/core';
import { mergeRanges, type BackfillsRepo, type JobsRepo } from '@tickfleet/store';
import type { DataReader, Interval } from './sink.js';

/** Where what was asked of a candle series is read: its job and the job's backfills. */
export interface RequestSources {
  backfills: Pick<BackfillsRepo, 'requestedRanges'>;
  jobs: Pick<JobsRepo, 'get'>;
}

export interface CandleSeries {
  venue: string;
  symbol: string;
  timeframe: Timeframe;
}

export interface RequestSplit {
  /** The parts inside what was requested (a backfill or the live range): a candle missing there is a loss to fill. */
  requested: Interval[];
  /** The parts outside every backfill and before the live range: never fetched, so not a loss. */
  neverRequested: Interval[];
}

/**
 * Splits `intervals` (sorted, disjoint) of a candle series by what was requested of it: the
 * chunks of every backfill of its job, and its live range. The live range runs to now from the
 * job's `since` once live collection has run (cursor set), or from the first stored candle
 * outside every backfill, whichever is earlier: live collection stores from where it started
 * on, and nothing else stores the series' candles, so a job without `since` (started the
 * worker's initial lookback back) needs no record of where it started. A candle belongs to the
 * part holding its open time.
 */
export async function splitByRequest(sources: RequestSources, reader: DataReader, series: CandleSeries, intervals: readonly Interval[]): Promise<RequestSplit> {
  if (intervals.length === 0) return { requested: [], neverRequested: [] };
  // The whole series (a caller's query may carry a range of its own).
  const whole = { venue: series.venue, symbol: series.symbol, timeframe: series.timeframe };
  const id = jobId({ ...whole, type: 'ohlcv' });
  const backfilled = await sources.backfills.requestedRanges(id);
  // Without backfills every stored candle is live, so the live range starts at or before the
  // first of them, and the intervals (holes between stored candles) all lie inside it.
  if (backfilled.length === 0) return { requested: [...intervals], neverRequested: [] };
  const outside = subtract(intervals, backfilled);
  if (outside.length === 0) return { requested: [...intervals], neverRequested: [] };
  const liveFrom = await liveStart(sources, reader, whole, id, backfilled, outside[outside.length - 1]!.toMs);
  const requested = liveFrom === null ? backfilled : mergeRanges([...backfilled, { fromMs: liveFrom, toMs: Number.POSITIVE_INFINITY }]);
  return { requested: intersect(intervals, requested), neverRequested: subtract(intervals, requested) };
}

/**
 * Where the series' live range starts (null: no live range before `untilMs`): the job's aligned
 * `since` once it has run, or the first stored candle outside every backfill, if earlier. Looked
 * for only before `untilMs`, one page read per stretch between backfills.
 */
async function liveStart(
  sources: RequestSources,
  reader: DataReader,
  series: CandleSeries,
  id: string,
  backfilled: readonly Interval[],
  untilMs: number,
): Promise<number | null> {
  const job = await sources.jobs.get(id);
  const since = job && job.cursor !== null && job.since !== null ? alignDown(job.since, series.timeframe) : null;
  const searchTo = since === null ? untilMs : Math.min(untilMs, since);
  let from = Number.NEGATIVE_INFINITY;
  for (const next of [...backfilled, { fromMs: Number.POSITIVE_INFINITY, toMs: Number.POSITIVE_INFINITY }]) {
    const to = Math.min(next.fromMs, searchTo);
    if (to > from) {
      const first = await firstStored(reader, { ...series, ...(from === Number.NEGATIVE_INFINITY ? {} : { fromMs: from }), toMs: to });
      if (first !== null) return since === null ? first : Math.min(since, first);
    }
    from = Math.max(from, next.toMs);
    if (from >= searchTo) break;
  }
  return since;
}

async function firstStored(reader: DataReader, query: CandleSeries & { fromMs?: number; toMs: number }): Promise<number | null> {
  for await (const candle of reader.streamCandles(query)) return candle.openTime;
  return null;
}

/** The parts of `a` (sorted, disjoint) outside every interval of `b` (sorted, merged). */
function subtract(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const x of a) {
    let cur = x.fromMs;
    for (const y of b) {
      if (y.toMs <= cur) continue;
      if (y.fromMs >= x.toMs) break;
      if (y.fromMs > cur) out.push({ fromMs: cur, toMs: y.fromMs });
      cur = Math.max(cur, y.toMs);
      if (cur >= x.toMs) break;
    }
    if (cur < x.toMs) out.push({ fromMs: cur, toMs: x.toMs });
  }
  return out;
}

/** The parts of `a` (sorted, disjoint) inside an interval of `b` (sorted, merged). */
function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const x of a) {
    for (const y of b) {
      if (y.fromMs >= x.toMs) break;
      const fromMs = Math.max(x.fromMs, y.fromMs);
      const toMs = Math.min(x.toMs, y.toMs);
      if (fromMs < toMs) out.push({ fromMs, toMs });
    }
  }
  return out;
}
