import { parseJobId, systemClock, ValidationError, type Clock, type Gap } from '@tickfleet/core';
import type { GapsRepo } from '@tickfleet/store';
import { findGaps } from './gaps.js';
import type { DataReader, Interval } from './sink.js';

export interface GapLedgerOptions {
  /** Fill attempts that returned nothing before a gap is recorded as a venue hole. @defaultValue 2 */
  holeAfterAttempts?: number;
  clock?: Clock;
}

export interface ScanResult {
  /** Gaps present now in the scanned range. */
  open: Interval[];
  /** Newly recorded gaps. */
  recorded: number;
  /** Ledger gaps found filled by this scan. */
  filled: number;
}

/**
 * Keeps the gap ledger (the state store's `gaps`) in step with the candles in the sink: a scan
 * records the holes between stored candles of a job and marks ledger gaps whose candles are now
 * all there as filled. A gap whose fill attempts keep returning nothing from the venue becomes a
 * `venue-hole` and is no longer turned into units.
 */
export class GapLedger {
  private readonly holeAfterAttempts: number;
  private readonly clock: Clock;

  constructor(
    private readonly gaps: GapsRepo,
    private readonly reader: DataReader,
    options: GapLedgerOptions = {},
  ) {
    this.holeAfterAttempts = options.holeAfterAttempts ?? 2;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Scans a candle job over [fromMs, toMs) (default: everything stored). Run after each candle
   * unit with the unit's range widened by one candle on each side, and on demand (`gaps scan`).
   */
  async scan(jobId: string, range: { fromMs?: number; toMs?: number } = {}): Promise<ScanResult> {
    const { venue, symbol, timeframe, type } = parseJobId(jobId);
    if (type !== 'ohlcv' || !timeframe) throw new ValidationError('jobId', 'a candle (ohlcv) job with a timeframe', jobId);
    const now = this.clock.now();
    const open = await findGaps(this.reader, { venue, symbol, timeframe, ...range });
    const known = await this.gaps.list({ jobId, open: true });
    let filled = 0;
    for (const g of known) {
      if (!within(g, range)) continue;
      if (open.some((o) => o.fromMs === g.fromMs && o.toMs === g.toMs)) continue;
      // No longer a hole as recorded: filled, or partly filled and replaced by its remaining holes (recorded below).
      filled += await this.gaps.markFilled(jobId, g.fromMs, g.toMs, now);
    }
    let recorded = 0;
    for (const o of open) {
      if (known.some((g) => g.fromMs === o.fromMs && g.toMs === o.toMs)) continue;
      await this.gaps.record({ jobId, fromMs: o.fromMs, toMs: o.toMs, kind: 'missing' }, now);
      recorded += 1;
    }
    return { open, recorded, filled };
  }

  /**
   * Records the outcome of fetching a gap: candles stored -> rescan the range; nothing returned ->
   * one more attempt, and after `holeAfterAttempts` such attempts the gap becomes a `venue-hole`.
   */
  async fillAttempted(gap: Pick<Gap, 'jobId' | 'fromMs' | 'toMs'>, fetchedRecords: number): Promise<void> {
    if (fetchedRecords > 0) {
      await this.scan(gap.jobId, { fromMs: gap.fromMs - 1, toMs: gap.toMs + 1 });
      return;
    }
    await this.gaps.attempt(gap.jobId, gap.fromMs, gap.toMs);
    const stored = (await this.gaps.list({ jobId: gap.jobId })).find((g) => g.fromMs === gap.fromMs && g.toMs === gap.toMs);
    if (stored && stored.kind === 'missing' && stored.attempts >= this.holeAfterAttempts) {
      await this.gaps.record({ jobId: gap.jobId, fromMs: gap.fromMs, toMs: gap.toMs, kind: 'venue-hole' }, stored.detectedAt);
    }
  }
}

function within(g: Interval, range: { fromMs?: number; toMs?: number }): boolean {
  return (range.fromMs === undefined || g.fromMs >= range.fromMs) && (range.toMs === undefined || g.toMs <= range.toMs);
}
