import { systemClock, type Clock } from '@tickfleet/core';
import { QUEUE_PREFIX, venueKey, type RedisClient } from '@tickfleet/queues';
import { FALLBACK_DEFAULTS } from './budget-defaults.js';
import { decideAcquire, EMPTY_BUDGET_ROW, toAcquireResult, type BudgetRow } from './acquire-math.js';
import { venueMarksChannel } from './venue-control/fleet-venue-control.js';
import type { FleetRestartPolicy, WorkerHeartbeat } from './venue-control/worker-heartbeat.js';

export interface LocalFallbackBudgetOptions {
  /** The venue's effective limit per window (`effectiveLimit(connector.rateLimit)`). */
  limit: number;
  periodMs: number;
  /** The venue's window: a sliding-window venue's share slides too; every other policy's is a fixed window. @defaultValue 'fixed-window' */
  policy?: FallbackPolicy;
  /** Live workers assumed before any heartbeat count arrived. @defaultValue FALLBACK_DEFAULTS.assumedWorkers */
  assumedWorkers?: number;
  clock?: Clock;
}

/** How a fallback share is counted: sliding for a sliding-window venue, else in fixed windows. */
export type FallbackPolicy = 'fixed-window' | 'sliding-window';

export type FallbackAcquire = { ok: true; used: number; share: number } | { ok: false; retryAtMs: number; share: number };

/**
 * One venue's window of {@link StoreOutageFallback}: a clock-aligned fixed window of
 * `floor(limit / liveWorkers)` weight, so the fleet as a whole stays within the venue's limit
 * without coordination (never the full limit per worker). Only used while {@link active}.
 *
 * The window in which the fallback begins grants nothing: the shared budget may already have
 * spent part or all of it, and with the store away no worker can know how much, so a share of it
 * could push the venue over its limit. Shares start with the next window.
 */
export class LocalFallbackBudget {
  private readonly clock: Clock;
  private limit: number;
  private periodMs: number;
  private policy: FallbackPolicy;
  private workers: number;
  /** This worker's own fixed window, kept by the budget's arithmetic (`decideAcquire`) with the share as its limit. */
  private row: BudgetRow = EMPTY_BUDGET_ROW;
  private activeSinceMs: number | null = null;
  /** Start of the window the fallback began in (no grants in it). */
  private blockedWindowStartMs = Number.NaN;

  constructor(options: LocalFallbackBudgetOptions) {
    this.clock = options.clock ?? systemClock;
    this.limit = options.limit;
    this.periodMs = options.periodMs;
    this.policy = options.policy ?? 'fixed-window';
    this.workers = Math.max(1, options.assumedWorkers ?? FALLBACK_DEFAULTS.assumedWorkers);
  }

  /** Latest live-worker count (from `WorkerHeartbeat`); at least 1. */
  setLiveWorkers(n: number): void {
    this.workers = Math.max(1, Math.floor(n));
  }

  get liveWorkers(): number {
    return this.workers;
  }

  setLimit(limit: number, periodMs: number, policy: FallbackPolicy = this.policy): void {
    this.limit = limit;
    this.periodMs = periodMs;
    this.policy = policy;
  }

  /** Whether the share slides (a sliding-window venue). */
  get sliding(): boolean {
    return this.policy === 'sliding-window';
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

  /**
   * Spends `weight` from this worker's share of the current window: the budget's fixed-window
   * arithmetic with `share` as the limit. A refusal (a weight above the share included) waits for
   * the window's end, never fails the unit: the share grows back when the store does.
   */
  tryAcquire(weight: number): FallbackAcquire {
    const share = this.share;
    if (this.policy === 'sliding-window') return this.trySliding(weight, share);
    const { decision, row } = decideAcquire(this.row, {
      policy: 'fixed-window',
      status: 'active',
      limit: share,
      periodMs: this.periodMs,
      weight,
      nowMs: this.clock.now(),
    });
    const windowEndMs = (decision.windowStartMs ?? decision.atMs) + this.periodMs;
    if (decision.windowStartMs === this.blockedWindowStartMs) return { ok: false, retryAtMs: windowEndMs, share };
    this.row = row;
    if (!decision.ok) return { ok: false, retryAtMs: windowEndMs, share };
    return { ok: true, used: decision.used, share };
  }

  /**
   * A sliding-window venue's share: the budget's sliding arithmetic with `share` as the limit, and
   * nothing granted for a whole period after the fallback began (the store may have spent the
   * venue's window up to then). A weight above the share waits a period.
   */
  private trySliding(weight: number, share: number): FallbackAcquire {
    const nowMs = this.clock.now();
    const blockedUntilMs = (this.activeSinceMs ?? Number.NEGATIVE_INFINITY) + this.periodMs;
    if (nowMs < blockedUntilMs) return { ok: false, retryAtMs: blockedUntilMs, share };
    const { decision, row } = decideAcquire(this.row, { policy: 'sliding-window', status: 'active', limit: share, periodMs: this.periodMs, weight, nowMs });
    this.row = row;
    const result = toAcquireResult(decision);
    return result.ok ? { ok: true, used: result.used, share } : { ok: false, retryAtMs: result.retryAtMs, share };
  }
}

/** What the budget gate asks of the fallback while the state store is unreachable. */
export interface FallbackBudget {
  tryAcquire(venue: string, weight: number): Promise<{ ok: true } | { ok: false; retryAtMs: number }>;
  /** Whether the venue is budgeted locally now (the store failed and has not answered since). */
  isActive(venue: string): boolean;
  /** The store answered again: the shared budget takes over. */
  deactivate(venue: string): void;
  /** Weight every live worker together may have spent locally in one window (limit-bounded). */
  fleetAllowance(venue: string): number;
  /**
   * End (epoch ms) of the latest window in which any worker of the fleet spent weight from its
   * fallback share (shared through Redis, which stays up while the store is away); 0 when none.
   */
  fleetFallbackUntil(venue: string): Promise<number>;
}

export interface StoreOutageFallbackOptions {
  /** Key prefix (tests pass a fresh one). @defaultValue QUEUE_PREFIX */
  prefix?: string;
  clock?: Clock;
}

/**
 * The store-outage fallback of one worker: per served venue a {@link LocalFallbackBudget} kept at
 * the connector's limit and the venue's live-worker count (from this worker's heartbeat), and the
 * fleet-wide mark in Redis (`<prefix>:venue:{<venue>}:budget-fallback-until`) of the latest window
 * in which any worker spent fallback weight, so a worker that reaches the store in that window
 * marks it spent there before using it (the store never saw that weight).
 */
export class StoreOutageFallback implements FallbackBudget {
  private readonly budgets = new Map<string, LocalFallbackBudget>();
  private readonly prefix: string;
  private readonly clock: Clock;

  constructor(
    private readonly redis: RedisClient,
    private readonly heartbeat: WorkerHeartbeat,
    options: StoreOutageFallbackOptions = {},
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Beats this worker's heartbeat for `venue` and keeps the venue's fallback share at `limit`
   * (the connector's effective limit) per `periodMs` over the live workers counted by that beat.
   * Call on every connector refresh. With `restart`, the beat also resets the venue's AIMD
   * concurrency when it finds the fleet restarted (see {@link WorkerHeartbeat.beat}). Resolves the
   * venue's live workers counted by the beat (this one included).
   */
  async configure(venue: string, limit: number, periodMs: number, restart?: FleetRestartPolicy, policy: FallbackPolicy = 'fixed-window'): Promise<number> {
    let budget = this.budgets.get(venue);
    if (!budget) {
      budget = new LocalFallbackBudget({ limit, periodMs, policy, clock: this.clock });
      this.budgets.set(venue, budget);
    }
    budget.setLimit(limit, periodMs, policy);
    budget.setLiveWorkers((await this.heartbeat.beat(venue, restart)).live);
    return budget.liveWorkers;
  }

  /** This worker's fallback weight per window for `venue` (0 for a venue never configured). */
  shareOf(venue: string): number {
    return this.budgets.get(venue)?.share ?? 0;
  }

  async tryAcquire(venue: string, weight: number): Promise<{ ok: true } | { ok: false; retryAtMs: number }> {
    const budget = this.budgets.get(venue);
    if (!budget) return { ok: false, retryAtMs: this.clock.now() + FALLBACK_DEFAULTS.unconfiguredRetryMs };
    budget.activate();
    const result = budget.tryAcquire(weight);
    if (result.ok) this.markFallbackWindow(venue, budget);
    return result;
  }

  isActive(venue: string): boolean {
    return this.budgets.get(venue)?.active ?? false;
  }

  deactivate(venue: string): void {
    this.budgets.get(venue)?.deactivate();
  }

  fleetAllowance(venue: string): number {
    const budget = this.budgets.get(venue);
    return budget ? budget.share * budget.liveWorkers : 0;
  }

  async fleetFallbackUntil(venue: string): Promise<number> {
    return Number((await this.redis.get(this.key(venue))) ?? 0);
  }

  /** Leaves every configured venue's live-worker set at once (clean shutdown), so the others' share grows now. */
  async leave(): Promise<void> {
    await Promise.all([...this.budgets.keys()].map((venue) => this.heartbeat.leave(venue).catch(() => undefined)));
  }

  /**
   * Tells the fleet (through Redis) that this worker spent fallback weight in the current window.
   * Not awaited: the request goes out on the local share either way, and with Redis away as well
   * the write could only delay it.
   */
  private markFallbackWindow(venue: string, budget: LocalFallbackBudget): void {
    const now = this.clock.now();
    const periodMs = budget.period;
    // A sliding window holds what was spent now for a whole period from now.
    const windowEnd = budget.sliding ? now + periodMs : Math.floor(now / periodMs) * periodMs + periodMs;
    void this.redis
      .set(this.key(venue), String(windowEnd), 'PX', windowEnd - now + periodMs)
      .then(() => this.redis.publish(venueMarksChannel(this.prefix), venue))
      .catch(() => undefined);
  }

  private key(venue: string): string {
    return venueKey(this.prefix, venue, 'budget-fallback-until');
  }
}
