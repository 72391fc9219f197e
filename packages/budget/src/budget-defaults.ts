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
  /** CoalescedAcquires: a venue's acquires per event-loop turn sent to the store at once; the rest are spent as one sum. */
  directPerTurn: 4,
  /** Redis and scoped budgets: how long a connector read from the store is reused (a pause or a new limit applies within this long). */
  connectorCacheMs: 1000,
  /** Redis budgets: how often the Redis server's clock is read again to check this process's clock against it. */
  timeSyncMs: 10_000,
  /** Scoped budgets: how a scope's requests are spread when its connector names no pacing (the proactive-limiter design's). */
  pacing: 'even' as Pacing,
});

/** Defaults of the store-outage fallback (a worker's local share of a venue's limit). */
export const FALLBACK_DEFAULTS = Object.freeze({
  /**
   * Live workers assumed before any heartbeat count arrived. Never 1: a worker that cannot see the
   * fleet must not assume it owns the whole limit.
   */
  assumedWorkers: 2,
  /** A venue this worker never configured a share for is asked about again after this long. */
  unconfiguredRetryMs: 1000,
});
