import type { Pacing } from '@tickfleet/core';

/**
 * Defaults of the budget's options, each written once: every option's `@defaultValue` names its
 * field here, and the code that fills the option in reads it. (Venue control's defaults that a
 * connector can set live beside the connector schema in @tickfleet/core: AIMD_DEFAULTS,
 * FREEZE_DEFAULTS, DEFAULT_BOOK_COOLDOWN.)
 */
export const BUDGET_DEFAULTS = Object.freeze({
  /**
   * BudgetGate: a refusal whose retry time is at most this far away is waited out in-process
   * (moving a unit to delayed and back costs more than a short sleep).
   */
  maxInlineWaitMs: 1000,
  /** Redis and scoped budgets: how long a connector read from the store is reused (a pause or a new limit applies within this long). */
  connectorCacheMs: 1000,
  /** Redis budgets: how often the Redis server's clock is read again to check this process's clock against it. */
  timeSyncMs: 10_000,
  /** Scoped budgets: how a scope's requests are spread when its connector names no pacing (the proactive-limiter design's). */
  pacing: 'even' as Pacing,
});

/** Defaults of the store-outage fallback (what a worker does while it cannot reach the shared budget). */
export const FALLBACK_DEFAULTS = Object.freeze({
  /**
   * While the shared budget is unreachable and this worker's lease cannot cover a request, the
   * request asks the budget again after this long. Longer than `BUDGET_DEFAULTS.maxInlineWaitMs`,
   * so the unit yields its slot instead of waiting in it for an outage.
   */
  outageRetryMs: 2000,
});

/**
 * Defaults of a worker's leases on a fixed-window budget (`BudgetGate`): weight the shared budget
 * granted this worker at once, spent locally until its window's guard.
 */
export const LEASE_DEFAULTS = Object.freeze({
  /** A lease never asks for more than this share of the venue's effective limit (waste per worker and window is below it). */
  maxShare: 0.1,
});

/**
 * Defaults of the end-of-window guard: the last stretch of a fixed window in which no grant is
 * sent, sized from measured latencies (see `window-guard.ts`).
 */
export const GUARD_DEFAULTS = Object.freeze({
  /** Added to the measured latencies: timer and event-loop lateness of a loaded process. */
  marginMs: 10,
  /** The guard never exceeds this share of the window (beyond it the venue's window is too short for its latency). */
  maxShare: 0.5,
  /** Mean deviations added to a latency's smoothed mean to bound it (TCP's retransmission timer, RFC 6298, takes 4). */
  deviations: 4,
});
