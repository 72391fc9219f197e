import { alignDown, calendarFor, timeframeMs, type Gap, type Timeframe, type TradingCalendar } from '@tickfleet/core';
import { mergeRanges } from '@tickfleet/store';
import type { DataReader, Interval } from './sink.js';

export interface GapQuery {
  venue: string;
  symbol: string;
  timeframe: Timeframe;
  /** Inclusive; defaults to the first stored candle. */
  fromMs?: number;
  /** Exclusive; defaults to after the last stored candle. */
  toMs?: number;
}

/**
 * Missing [fromMs, toMs) intervals between stored candles of one series, oldest first: the candles
 * the venue's trading calendar (calendarFor) says exist there and the sink lacks. On a 24/7 venue
 * that is every hole in the UTC grid; on a US-equity venue nights, weekends and exchange holidays
 * are not gaps, and each gap is a run of consecutive grid candles inside sessions.
 */
export async function findGaps(reader: DataReader, query: GapQuery): Promise<Interval[]> {
  const holes = await reader.missingIntervals(query);
  const calendar = calendarFor(query.venue);
  return calendar.name === '24/7' ? holes : holes.flatMap((h) => expectedRuns(calendar, query.timeframe, h));
}

/**
 * How many candles of `tf` the venue's calendar says exist in `[fromMs, toMs)`: what a complete
 * series holds there (`data count`'s `expected`). Counted, not listed, on a 24/7 venue.
 */
export function expectedCandleCount(venue: string, tf: Timeframe, fromMs: number, toMs: number): number {
  const calendar = calendarFor(venue);
  if (toMs <= fromMs) return 0;
  if (calendar.name !== '24/7') return calendar.expectedOpenTimes(tf, fromMs, toMs).length;
  const len = timeframeMs(tf);
  const aligned = alignDown(fromMs, tf);
  const first = aligned < fromMs ? aligned + len : aligned;
  return first >= toMs ? 0 : Math.floor((toMs - 1 - first) / len) + 1;
}

/**
 * The candles `calendar` expects in a hole between two stored candles, as runs of consecutive grid
 * candles: `[first, last + length)`, each holding exactly `(toMs - fromMs) / length` expected candles.
 */
export function expectedRuns(calendar: TradingCalendar, tf: Timeframe, hole: Interval): Interval[] {
  const len = timeframeMs(tf);
  const runs: Interval[] = [];
  for (const t of calendar.expectedOpenTimes(tf, hole.fromMs, hole.toMs)) {
    const last = runs[runs.length - 1];
    if (last && last.toMs === t) last.toMs = t + len;
    else runs.push({ fromMs: t, toMs: t + len });
  }
  return runs;
}

/**
 * The grid candles of `tf` whose open time lies in `part`, as runs `[first, last + length)`: a
 * missing interval cut where a backfill or the live range begins or ends, made whole candles again
 * (the ledger records whole candles; on a US-equity venue only those its calendar expects).
 */
export function gridRuns(venue: string, tf: Timeframe, part: Interval): Interval[] {
  const calendar = calendarFor(venue);
  if (calendar.name !== '24/7') return expectedRuns(calendar, tf, part);
  const len = timeframeMs(tf);
  const fromMs = alignDown(part.fromMs + len - 1, tf);
  const toMs = alignDown(part.toMs + len - 1, tf);
  return fromMs < toMs ? [{ fromMs, toMs }] : [];
}

/**
 * Open gaps that are worth fetching again (kind `missing`, not filled), merged where they
 * touch or overlap, oldest first: the ranges `backfill --gaps` turns into units.
 */
export function gapsToRanges(gaps: readonly Gap[]): Interval[] {
  return mergeRanges(gaps.filter((g) => g.kind === 'missing' && g.filledAt === null));
}
