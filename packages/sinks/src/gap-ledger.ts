import { calendarFor, parseJobId, systemClock, timeframeMs, ValidationError, type Clock, type Gap, type Timeframe } from '@tickfleet/core';
import type { GapsRepo } from '@tickfleet/store';
import type { Logger } from '@tickfleet/telemetry';
import { findGaps, gridRuns } from './gaps.js';
import { splitByRequest, type RequestSources } from './requested-ranges.js';
import type { CandleQuery, DataReader, Interval } from './sink.js';
import { GAP_LEDGER_DEFAULTS } from './sink-defaults.js';

/**
 * Records accepted but not yet in the sink (a pipeline's spool during a sink outage). What the
 * sink lacks there is not a gap yet: the ledger defers recording it until replay is done.
 */
export interface SpooledRecords {
  /** Whether candles of the series in [fromMs, toMs) may still be waiting to reach the sink. */
  hasSpooledCandles(query: CandleQuery): boolean;
  /** Called after replay moved records into the sink. */
  onReplayed(listener: () => void): void;
}

export interface GapLedgerOptions {
  /** Fill attempts that returned nothing before a gap is recorded as a venue hole. @defaultValue {@link GAP_LEDGER_DEFAULTS.holeAfterAttempts} */
  holeAfterAttempts?: number;
  clock?: Clock;
  /** The writer's pipeline: ranges whose candles are still spooled are scanned again once replayed. */
  spooled?: SpooledRecords;
  /** Where a failed deferred rescan is reported (it is tried again after the next replay). */
  logger?: Logger;
}

/** What the ledger reads and writes in the state store: the gaps, and what was requested of each job. */
export interface LedgerStore extends RequestSources {
  gaps: GapsRepo;
}

export interface ScanResult {
  /** Gaps present now in the scanned range: holes in what was requested (a backfill or the live range). */
  open: Interval[];
  /**
   * Missing stretches of the scanned range that no backfill and not the live range asked for:
   * never fetched, so not gaps (a `backfill` of them would fetch them). Not recorded.
   */
  neverRequested: Interval[];
  /** Newly recorded gaps. */
  recorded: number;
  /** Ledger gaps found filled by this scan. */
  filled: number;
  /** Ledger records of stretches never requested (recorded as gaps by earlier versions), removed by this scan. */
  removed: number;
  /** True when candles of the range were still spooled: nothing was recorded, the range is scanned again after replay. */
  deferred: boolean;
}

interface DeferredScan {
  jobId: string;
  range: { fromMs?: number; toMs?: number };
}

/**
 * Keeps the gap ledger (the state store's `gaps`) in step with the candles in the sink: a scan
 * records the holes between stored candles of a job inside what was requested of it (its
 * backfills and its live range: splitByRequest) and marks ledger gaps whose candles are now all
 * there as filled. What lies between stored candles but was never requested (history between
 * two backfilled islands, say) is reported, not recorded. A gap whose fill attempts keep
 * returning nothing from the venue becomes a `venue-hole` and is no longer turned into units.
 */
export class GapLedger {
  private readonly holeAfterAttempts: number;
  private readonly clock: Clock;
  private readonly spooled: SpooledRecords | undefined;
  private readonly logger: Logger | undefined;
  private deferredScans: DeferredScan[] = [];
  private rescanning: Promise<void> | undefined;
  private rescanAgain = false;

  private readonly gaps: GapsRepo;

  constructor(
    private readonly store: LedgerStore,
    private readonly reader: DataReader,
    options: GapLedgerOptions = {},
  ) {
    this.gaps = store.gaps;
    this.holeAfterAttempts = options.holeAfterAttempts ?? GAP_LEDGER_DEFAULTS.holeAfterAttempts;
    this.clock = options.clock ?? systemClock;
    this.spooled = options.spooled;
    this.logger = options.logger;
    this.spooled?.onReplayed(() => void this.rescanDeferred());
  }

  /** Ranges whose scan waits for spooled candles to be replayed. */
  get deferred(): readonly DeferredScan[] {
    return this.deferredScans;
  }

  /**
   * Scans a candle job over [fromMs, toMs) (default: everything stored). Run after each candle
   * unit over its range and the candle before it (a backfill chunk's also one candle past its
   * end), and on demand (`gaps scan`).
   *
   * While candles of the range are still spooled (the sink was down when they were collected),
   * the sink's holes there are not trusted: no gap is recorded and only ledger gaps with no hole
   * left at all are marked filled; the range is scanned again once replay moved the candles.
   */
  async scan(jobId: string, range: { fromMs?: number; toMs?: number } = {}): Promise<ScanResult> {
    const { venue, symbol, timeframe, type } = parseJobId(jobId);
    if (type !== 'ohlcv' || !timeframe) throw new ValidationError('jobId', 'a candle (ohlcv) job with a timeframe', jobId);
    const now = this.clock.now();
    const series = { venue, symbol, timeframe, ...range };
    const deferred = this.spooled?.hasSpooledCandles(series) ?? false;
    const missing = await findGaps(this.reader, series);
    const split = await splitByRequest(this.store, this.reader, { venue, symbol, timeframe }, missing);
    const open = split.requested.flatMap((part) => gridRuns(venue, timeframe, part));
    const known = await this.gaps.list({ jobId, open: true });
    let filled = 0;
    let removed = 0;
    for (const g of known) {
      if (!within(g, range)) continue;
      if (open.some((o) => o.fromMs === g.fromMs && o.toMs === g.toMs)) continue;
      // A partly filled gap is replaced by what remains, which a deferred scan cannot record yet.
      if (deferred && open.some((o) => overlaps(o, g))) continue;
      if (split.neverRequested.some((n) => overlaps(n, g))) {
        // Recorded as a loss though (part of) it was never asked for: not a gap. Its requested part, if any, is recorded below.
        if (!deferred && (await this.gaps.remove(jobId, g.fromMs, g.toMs))) removed += 1;
        continue;
      }
      // No longer a hole as recorded: filled, or partly filled and replaced by its remaining holes (recorded below).
      filled += await this.gaps.markFilled(jobId, g.fromMs, g.toMs, now);
    }
    if (deferred) {
      if (!this.deferredScans.some((d) => d.jobId === jobId && d.range.fromMs === range.fromMs && d.range.toMs === range.toMs)) {
        this.deferredScans.push({ jobId, range: { ...range } });
      }
      return { open, neverRequested: split.neverRequested, recorded: 0, filled, removed, deferred: true };
    }
    let recorded = 0;
    for (const o of open) {
      if (known.some((g) => g.fromMs === o.fromMs && g.toMs === o.toMs)) continue;
      await this.gaps.record({ jobId, fromMs: o.fromMs, toMs: o.toMs, kind: 'missing' }, now);
      recorded += 1;
    }
    return { open, neverRequested: split.neverRequested, recorded, filled, removed, deferred: false };
  }

  /**
   * Scans again the deferred ranges whose candles are no longer spooled (called after each
   * replayed segment; one pass at a time, a request during a pass runs one more).
   */
  rescanDeferred(): Promise<void> {
    if (this.rescanning) {
      this.rescanAgain = true;
      return this.rescanning;
    }
    this.rescanning = (async () => {
      do {
        this.rescanAgain = false;
        const due = this.deferredScans;
        this.deferredScans = [];
        for (const d of due) {
          try {
            await this.scan(d.jobId, d.range);
          } catch (err) {
            this.deferredScans.push(d);
            this.logger?.warn({ err, jobId: d.jobId }, 'deferred gap scan failed; trying again after the next replay');
          }
        }
      } while (this.rescanAgain);
    })().finally(() => (this.rescanning = undefined));
    return this.rescanning;
  }

  /**
   * Records the outcome of fetching a gap: candles stored -> rescan the range; nothing returned ->
   * one more attempt, and after `holeAfterAttempts` such attempts the gap becomes a `venue-hole`.
   */
  async fillAttempted(gap: Pick<Gap, 'jobId' | 'fromMs' | 'toMs'>, fetchedRecords: number): Promise<void> {
    if (fetchedRecords > 0) {
      const { venue, timeframe } = parseJobId(gap.jobId);
      const range = timeframe ? withNeighbours(venue, timeframe, gap.fromMs, gap.toMs) : {};
      const { open } = await this.scan(gap.jobId, range);
      // Candles came back, but none inside this gap (they filled another one): an empty attempt for it.
      if (!open.some((o) => o.fromMs === gap.fromMs && o.toMs === gap.toMs)) return;
    }
    await this.gaps.attempt(gap.jobId, gap.fromMs, gap.toMs);
    const stored = (await this.gaps.list({ jobId: gap.jobId })).find((g) => g.fromMs === gap.fromMs && g.toMs === gap.toMs);
    if (stored && stored.kind === 'missing' && stored.attempts >= this.holeAfterAttempts) {
      await this.gaps.record({ jobId: gap.jobId, fromMs: gap.fromMs, toMs: gap.toMs, kind: 'venue-hole' }, stored.detectedAt);
    }
  }
}

/**
 * `[fromMs, toMs)` of a series widened to the calendar's candle before it and the one at its end:
 * the stored candles that bound a hole there. A scan sees holes only between stored candles of its
 * range, so without them a gap still empty, or filled at one end only, would look filled, and a
 * hole at the start of a range would go unseen. On a US-equity calendar those neighbours can be
 * days away (nights, weekends, holidays, closures); on a 24/7 one they are one candle away.
 */
export function withNeighbours(venue: string, tf: Timeframe, fromMs: number, toMs: number): { fromMs: number; toMs: number } {
  const len = timeframeMs(tf);
  const calendar = calendarFor(venue);
  if (calendar.name === '24/7') return { fromMs: fromMs - len, toMs: toMs + len };
  // Looked for one day back first (listing 14 days of minutes for every scan would cost more than the scan).
  let before: number | undefined;
  for (const backMs of NEIGHBOUR_SEARCH_MS) {
    before = calendar.expectedOpenTimes(tf, fromMs - backMs, fromMs).at(-1);
    if (before !== undefined) break;
  }
  const after = calendar.nextExpectedOpen(tf, toMs - 1);
  return { fromMs: before ?? fromMs - len, toMs: after + 1 };
}

/** How far back a neighbour candle is looked for, in turn: the last reaches past any run of US market closures (a weekend plus holidays or an unscheduled closure). */
const NEIGHBOUR_SEARCH_MS = [1, 4, 14].map((days) => days * 86_400_000);

function overlaps(a: Interval, b: Interval): boolean {
  return a.fromMs < b.toMs && a.toMs > b.fromMs;
}

function within(g: Interval, range: { fromMs?: number; toMs?: number }): boolean {
  return (range.fromMs === undefined || g.fromMs >= range.fromMs) && (range.toMs === undefined || g.toMs <= range.toMs);
}
