import type { Gap, Timeframe } from '@tickfleet/core';
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

/** Missing [fromMs, toMs) intervals between stored candles of one series, oldest first. */
export function findGaps(reader: DataReader, query: GapQuery): Promise<Interval[]> {
  return reader.missingIntervals(query);
}

/**
 * Open gaps that are worth fetching again (kind `missing`, not filled), merged where they
 * touch or overlap, oldest first: the ranges `backfill --gaps` turns into units.
 */
export function gapsToRanges(gaps: readonly Gap[]): Interval[] {
  const open = gaps
    .filter((g) => g.kind === 'missing' && g.filledAt === null && g.toMs > g.fromMs)
    .map((g) => ({ fromMs: g.fromMs, toMs: g.toMs }))
    .sort((a, b) => a.fromMs - b.fromMs || a.toMs - b.toMs);
  const out: Interval[] = [];
  for (const r of open) {
    const last = out[out.length - 1];
    if (last && r.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, r.toMs);
    else out.push({ ...r });
  }
  return out;
}
