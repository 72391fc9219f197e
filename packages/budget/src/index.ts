export type { AcquireResult, BudgetUsage, BudgetsRepo } from './budget-types.js';
export {
  CLOCK_SKEW_TOLERANCE_MS,
  PAUSED_RETRY_MS,
  emissionIntervalMs,
  onCallerClock,
  toAcquireResult,
  toBudgetUsage,
  type AcquireDecision,
  type BudgetState,
} from './acquire-math.js';
export { BudgetGate, boundaryGuardMs, type BudgetGateMetrics, type BudgetGateOptions, type FreezeSource } from './budget-gate.js';
export { aimdLimitsFor, DEFAULT_AIMD_LIMITS, startConcurrency, type AimdLimits } from './aimd-settings.js';
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
} from './fleet-venue-control.js';
export { FreezeWatch, type FreezeWatchOptions } from './freeze-watch.js';
export { DEFAULT_PACING, ScopedBudgets, type ScopedBudgetsOptions } from './scoped-budgets.js';
export { OutcomeReporter, type OutcomeReporterOptions } from './outcome-reporter.js';
export { StoreOutageFallback, type FallbackBudget, type StoreOutageFallbackOptions } from './store-outage-fallback.js';
export { WorkerHeartbeat, type WorkerHeartbeatOptions } from './worker-heartbeat.js';
export type { ConnectorLookup } from './cached-connectors.js';
export { openRedisBudgets, RedisBudgetsRepo, type OpenRedisBudgetsOptions, type RedisBudgets, type RedisBudgetsOptions } from './redis-budgets.js';
export { openBudgets, type BudgetsHome, type OpenedBudgets } from './open-budgets.js';
