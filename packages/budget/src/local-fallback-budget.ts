import { systemClock, type Clock } from '@tickfleet/core';

export interface LocalFallbackBudgetOptions {
  /** The venue's effective limit per window (`effectiveLimit(connector.rateLimit)`). */
  limit: number;
  periodMs: number;
  /**
   * Live workers assumed before any heartbeat count arrived. Never 1 by default: a worker that
   * cannot see the fleet must not assume it owns the whole limit. @defaultValue 2
   */
  assumedWorkers?: number;
  clock?: Clock;
}

export type FallbackAcquire = { ok: true; used: number; share: number } | { ok: false; retryAtMs: number; share: number };

/**
 * The in-process budget a worker falls back to while the state store is unreachable: a
 * clock-aligned fixed window of `floor(limit / liveWorkers)` weight, so the fleet as a whole stays
 * within the venue's limit without coordination (never the full limit per worker). Only used
 * while {@link active}; the worker exports that as a metric.
 *
 * The window in which the fallback begins grants nothing: the shared budget may already have
 * spent part or all of it, and with the store away no worker can know how much, so a share of it
 * could push the venue over its limit. Shares start with the next window.
 */
export class LocalFallbackBudget {
  private readonly clock: Clock;
  private limit: number;
  private periodMs: number;
  private workers: number;
  private windowStartMs = Number.NaN;
  private used = 0;
  private activeSinceMs: number | null = null;
  /** Start of the window the fallback began in (no grants in it). */
  private blockedWindowStartMs = Number.NaN;

  constructor(options: LocalFallbackBudgetOptions) {
    this.clock = options.clock ?? systemClock;
    this.limit = options.limit;
    this.periodMs = options.periodMs;
    this.workers = Math.max(1, options.assumedWorkers ?? 2);
  }

  /** Latest live-worker count (from `WorkerHeartbeat`); at least 1. */
  setLiveWorkers(n: number): void {
    this.workers = Math.max(1, Math.floor(n));
  }

  get liveWorkers(): number {
    return this.workers;
  }

  setLimit(limit: number, periodMs: number): void {
    this.limit = limit;
    this.periodMs = periodMs;
  }

  /** Length of the budget window in ms. */
  get period(): number {
    return this.periodMs;
  }

  /** This worker's weight per window: `floor(limit / liveWorkers)`. */
  get share(): number {
    return Math.floor(this.limit / this.workers);
  }

  get active(): boolean {
    return this.activeSinceMs !== null;
  }

  /** When fallback began (epoch ms), or null. */
  get activeSince(): number | null {
    return this.activeSinceMs;
  }

  /** The store became unreachable: budget locally from now on. */
  activate(): void {
    if (this.activeSinceMs !== null) return;
    this.activeSinceMs = this.clock.now();
    this.blockedWindowStartMs = Math.floor(this.activeSinceMs / this.periodMs) * this.periodMs;
  }

  /** The store is back: the shared budget takes over again. */
  deactivate(): void {
    this.activeSinceMs = null;
  }

  /** Spends `weight` from this worker's share of the current window. */
  tryAcquire(weight: number): FallbackAcquire {
    const now = this.clock.now();
    const windowStart = Math.floor(now / this.periodMs) * this.periodMs;
    if (windowStart !== this.windowStartMs) {
      this.windowStartMs = windowStart;
      this.used = 0;
    }
    const share = this.share;
    if (windowStart === this.blockedWindowStartMs || this.used + weight > share) return { ok: false, retryAtMs: windowStart + this.periodMs, share };
    this.used += weight;
    return { ok: true, used: this.used, share };
  }
}
