import type { FreezeCause } from '@tickfleet/budget';
import { ValidationError } from '@tickfleet/core';
import { rateLimitedLog, type Logger } from '@tickfleet/telemetry';
import type { FleetStatus } from './fleet-status.js';
import { counterIncrease, counterRates, RingBuffer } from './internal/ring-buffer.js';

/** The time ranges the history route and the page offer, in minutes. */
export const HISTORY_RANGES_MIN = [15, 30, 60] as const;
export type HistoryRangeMin = (typeof HISTORY_RANGES_MIN)[number];

const MAX_RANGE_MS = Math.max(...HISTORY_RANGES_MIN) * 60_000;

/** One sample of a venue: gauges as read, counters as totals (rates come from their deltas). */
/** Counters of one venue that only grow (a drop means they were reset, e.g. Redis was emptied). */
export interface CompletionTotals {
  /** Units that completed successfully (every kind: live, backfill, book poll). */
  units: number;
  /** Records those units stored. */
  records: number;
}

export interface VenueSample {
  atMs: number;
  budgetUsed: number | null;
  budgetLimit: number | null;
  /** Fleet-wide AIMD concurrency (the in-flight limit workers obey) and its ceiling. */
  concurrency: number;
  concurrencyMax: number;
  cursorLagMs: number | null;
  unitsCompleted: number;
  recordsWritten: number;
  freeze: { cause: FreezeCause; untilMs: number } | null;
}

/** A freeze on the timeline: from the first sample that saw it to its end (or its announced end while it lasts). */
export interface FreezeMark {
  cause: FreezeCause;
  fromMs: number;
  toMs: number;
}

/** A venue's samples in the requested range, column by column (what the charts plot). */
export interface VenueHistory {
  venue: string;
  /** Sample times (epoch ms), oldest first; every other array has one entry per time. */
  t: number[];
  budgetUsed: (number | null)[];
  budgetLimit: (number | null)[];
  /** Null for a venue's first sample (no previous one to take a delta from). */
  unitsPerSec: (number | null)[];
  recordsPerSec: (number | null)[];
  concurrency: number[];
  concurrencyMax: number[];
  cursorLagSec: (number | null)[];
  marks: FreezeMark[];
  /** Units completed and records written over the range: the sum of each rate times its interval (counter increases, resets counted as such). */
  totals: { unitsCompleted: number; recordsWritten: number };
}

export interface FleetHistory {
  atMs: number;
  minutes: HistoryRangeMin;
  intervalMs: number;
  /** Samples kept per venue (the ring buffer's capacity). */
  capacity: number;
  venues: VenueHistory[];
}

export interface HistoryCollectorOptions {
  /** The fleet snapshot (the dashboard's status cache). */
  status: () => Promise<FleetStatus>;
  /**
   * A venue's fleet-wide totals (counters that only grow; `FleetVenueControl.totals`): units that
   * succeeded and the records they stored, which the workers add with their batched AIMD reports.
   */
  completions: (venue: string) => Promise<CompletionTotals>;
  /** Time between samples. */
  intervalMs: number;
  logger?: Logger;
}

/** Parses the route's `minutes`; anything but 15, 30 or 60 is a ValidationError naming it. */
export function historyRange(raw: unknown): HistoryRangeMin {
  if (raw === undefined) return 15;
  const n = Number(raw);
  const found = HISTORY_RANGES_MIN.find((m) => m === n);
  if (found === undefined) throw new ValidationError('minutes', `one of ${HISTORY_RANGES_MIN.join(', ')}`, raw);
  return found;
}

/** Freeze bands from consecutive samples: one per run of samples frozen with the same cause. */
export function freezeMarks(samples: readonly VenueSample[]): FreezeMark[] {
  const marks: FreezeMark[] = [];
  let open: FreezeMark | undefined;
  for (const s of samples) {
    if (s.freeze && open && open.cause === s.freeze.cause) {
      // Extended (a new 429 while frozen): the freeze never shortens.
      open.toMs = Math.max(open.toMs, s.freeze.untilMs);
      continue;
    }
    if (open) {
      // Lifted (or replaced by another cause) at the latest by this sample.
      open.toMs = Math.min(open.toMs, s.atMs);
      open = undefined;
    }
    if (s.freeze) {
      open = { cause: s.freeze.cause, fromMs: s.atMs, toMs: s.freeze.untilMs };
      marks.push(open);
    }
  }
  return marks;
}

/**
 * The dashboard's own history: every `intervalMs` it takes one sample per venue from the fleet
 * snapshot (budget use and limit, AIMD concurrency, cursor lag, freeze) and the completion
 * counters, into a ring buffer per venue holding an hour of samples. The page charts it; no
 * Prometheus is involved. A venue that leaves the fleet keeps its samples until they are an
 * hour old.
 */
export class HistoryCollector {
  readonly intervalMs: number;
  readonly capacity: number;
  private readonly rings = new Map<string, RingBuffer<VenueSample>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly logFailure: ReturnType<typeof rateLimitedLog> | undefined;

  constructor(private readonly options: HistoryCollectorOptions) {
    // A Redis or store outage fails every sample; one line per cause a minute is enough to see it.
    this.logFailure = options.logger && rateLimitedLog(options.logger, 60_000);
    if (!Number.isFinite(options.intervalMs) || options.intervalMs < 100)
      throw new ValidationError('history intervalMs', 'at least 100 ms', options.intervalMs);
    this.intervalMs = options.intervalMs;
    this.capacity = Math.ceil(MAX_RANGE_MS / options.intervalMs) + 1;
  }

  /** Takes a sample now and then every `intervalMs` until {@link stop}. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = (): void => {
      this.running = this.sample()
        .catch((err: unknown) => this.logFailure?.('warn', err instanceof Error ? err.name : 'error', { err }, 'history sample failed'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) {
            this.timer = setTimeout(loop, this.intervalMs);
            this.timer.unref();
          }
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Takes one sample of every venue in the snapshot. */
  async sample(): Promise<void> {
    const status = await this.options.status();
    const totals = await Promise.all(status.venues.map((v) => this.options.completions(v.venue)));
    status.venues.forEach((v, i) => {
      let ring = this.rings.get(v.venue);
      if (!ring) this.rings.set(v.venue, (ring = new RingBuffer<VenueSample>(this.capacity)));
      // A snapshot reused from the status cache is not a new sample.
      if ((ring.last()?.atMs ?? -Infinity) >= status.atMs) return;
      ring.push({
        atMs: status.atMs,
        budgetUsed: v.budget?.used ?? null,
        budgetLimit: v.budget?.limit ?? null,
        concurrency: v.concurrency.current,
        concurrencyMax: v.concurrency.max,
        cursorLagMs: v.cursorLag.maxMs,
        unitsCompleted: totals[i]!.units,
        recordsWritten: totals[i]!.records,
        freeze: v.freeze ? { cause: v.freeze.cause, untilMs: v.freeze.untilMs } : null,
      });
    });
    for (const [venue, ring] of this.rings) if ((ring.last()?.atMs ?? 0) < status.atMs - MAX_RANGE_MS) this.rings.delete(venue);
  }

  /** Every venue's samples of the last `minutes`, as the charts plot them. */
  history(minutes: HistoryRangeMin, nowMs = Date.now()): FleetHistory {
    const fromMs = nowMs - minutes * 60_000;
    const venues = [...this.rings.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([venue, ring]) => venueHistory(venue, ring.toArray(), fromMs))
      .filter((h) => h.t.length > 0);
    return { atMs: nowMs, minutes, intervalMs: this.intervalMs, capacity: this.capacity, venues };
  }
}

function venueHistory(venue: string, all: readonly VenueSample[], fromMs: number): VenueHistory {
  // Rates over the whole buffer first, so the range's first sample has one when an older sample exists.
  const times = all.map((s) => s.atMs);
  const unitsPerSec = counterRates(
    times,
    all.map((s) => s.unitsCompleted),
  );
  const recordsPerSec = counterRates(
    times,
    all.map((s) => s.recordsWritten),
  );
  let first = all.findIndex((s) => s.atMs >= fromMs);
  if (first < 0) first = all.length;
  const samples = all.slice(first);
  let unitsCompleted = 0;
  let recordsWritten = 0;
  for (let i = Math.max(1, first); i < all.length; i++) {
    unitsCompleted += counterIncrease(all[i - 1]!.unitsCompleted, all[i]!.unitsCompleted);
    recordsWritten += counterIncrease(all[i - 1]!.recordsWritten, all[i]!.recordsWritten);
  }
  return {
    venue,
    t: samples.map((s) => s.atMs),
    budgetUsed: samples.map((s) => s.budgetUsed),
    budgetLimit: samples.map((s) => s.budgetLimit),
    unitsPerSec: unitsPerSec.slice(first),
    recordsPerSec: recordsPerSec.slice(first),
    concurrency: samples.map((s) => s.concurrency),
    concurrencyMax: samples.map((s) => s.concurrencyMax),
    cursorLagSec: samples.map((s) => (s.cursorLagMs === null ? null : s.cursorLagMs / 1000)),
    marks: freezeMarks(samples),
    totals: { unitsCompleted, recordsWritten },
  };
}
