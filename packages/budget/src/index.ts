/*
 * @tickfleet/budget: a venue's shared request budget, and venue control.
 *
 * Budget: `BudgetsRepo` (the state store's, or `RedisBudgetsRepo` through `openBudgets`), the
 * arithmetic every backend follows (`acquire-math.ts`), the `BudgetGate` every request passes, the
 * per-scope budgets (`ScopedBudgets`), the worker's leases and end-of-window guard (in the gate, `window-guard.ts`)
 * and the store-outage state (`StoreOutageFallback`).
 *
 * Venue control (`src/venue-control/`): everything that stops or slows a venue, one API each:
 * - freeze and its escalation, AIMD concurrency, per-instrument book backoff and the order-book
 *   cooldown: `FleetVenueControl` (Redis, one Lua script per change), watched per worker by
 *   `FreezeWatch`, fed by `OutcomeReporter` and `WorkerHeartbeat`; every time they keep in Redis is
 *   on the fleet's timeline (`FleetTimeline`: the Redis server's clock), whatever a worker's clock says;
 * - what a connector's status (`active`, `paused`, `disabled`) lets a venue do: `STATUS_EFFECTS`
 *   and `venueHold` ("may this venue send now, and if not, why and until when");
 * - how a venue is doing (healthy, degraded, failing, frozen, paused, disabled, idle): `venueHealth`
 *   over the fleet-wide outcome record the AIMD reports keep, read by `FleetVenueControl.health`.
 */
export type { AcquireResult, BudgetUsage, BudgetsRepo } from './budget-types.js';
export {
  CLOCK_SKEW_TOLERANCE_MS,
  EMPTY_BUDGET_ROW,
  decideAcquire,
  decideObserve,
  emissionIntervalMs,
  onCallerClock,
  toAcquireResult,
  toBudgetUsage,
  type AcquireDecision,
  type AcquireInput,
  type BudgetRow,
  type BudgetState,
} from './acquire-math.js';
export { BudgetGate, type BudgetGateMetrics, type BudgetReservation, type BudgetGateOptions, type FreezeSource } from './budget-gate.js';
export { ScopedBudgets, type ScopedBudgetsOptions } from './scoped-budgets.js';
export { BUDGET_DEFAULTS, FALLBACK_DEFAULTS, GUARD_DEFAULTS, LEASE_DEFAULTS } from './budget-defaults.js';
export { boundaryGuardMs, windowGuardMs } from './window-guard.js';
export { StoreOutageFallback, type FallbackBudget, type StoreOutageFallbackOptions } from './store-outage-fallback.js';
export type { ConnectorLookup } from './cached-connectors.js';
export { openRedisBudgets, RedisBudgetsRepo, type OpenRedisBudgetsOptions, type RedisBudgets, type RedisBudgetsOptions } from './redis-budgets.js';
export { openBudgets, type BudgetsHome, type OpenedBudgets } from './open-budgets.js';

// Venue control.
export {
  FleetVenueControl,
  FREEZE_CAUSES,
  freezeEscalationFor,
  type FreezeEscalation,
  MAX_OUTCOME_BATCH,
  venueMarksChannel,
  type AimdChange,
  type AimdOutcome,
  type BookBackoffOptions,
  type FleetVenueControlOptions,
  type FreezeCause,
  type VenueFreeze,
  type VenueControlSnapshot,
  type ControlStep,
} from './venue-control/fleet-venue-control.js';
export { PAUSED_RETRY_MS, STATUS_EFFECTS, statusSends, venueHold, type StatusEffect, type VenueHold } from './venue-control/venue-status.js';
export { aimdLimitsFor, DEFAULT_AIMD_LIMITS, startConcurrency, type AimdLimits } from './venue-control/aimd-settings.js';
export { BOOK_BACKOFF_DEFAULTS, BOOK_BACKOFF_JITTER, jitteredBackoffMs } from './venue-control/book-backoff.js';
export { FleetTimeline, type FleetTimelineOptions } from './venue-control/fleet-timeline.js';
export { FreezeWatch, type FreezeWatchOptions } from './venue-control/freeze-watch.js';
export { OutcomeReporter, type OutcomeReporterOptions } from './venue-control/outcome-reporter.js';
export { WorkerHeartbeat, type WorkerHeartbeatOptions } from './venue-control/worker-heartbeat.js';
export {
  EMPTY_OUTCOME_RECORD,
  VENUE_HEALTH_DEFAULTS,
  VENUE_HEALTH_STATES,
  venueHealth,
  type FailureCause,
  type VenueHealth,
} from './venue-control/venue-health.js';
