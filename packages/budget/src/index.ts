export { AimdController, p95, type AimdChange, type AimdStep, type AimdOutcome } from './aimd-controller.js';
export { aimdLimitsFor, DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';
export {
  FleetVenueControl,
  type FleetVenueControlOptions,
  type FreezeCause,
  type VenueFreeze,
  type VenueControlSnapshot,
  type ControlStep,
} from './fleet-venue-control.js';
export { backoffMs, retryAtFromHeaders, type BackoffOptions } from './backoff.js';
export { LocalFallbackBudget, type LocalFallbackBudgetOptions, type FallbackAcquire } from './local-fallback-budget.js';
export { WorkerHeartbeat, type WorkerHeartbeatOptions } from './worker-heartbeat.js';
