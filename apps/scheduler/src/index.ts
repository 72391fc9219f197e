export { Scheduler, type SchedulerOptions, type TickResult } from './scheduler.js';
export { SCHEDULER_DEFAULTS } from './scheduler-defaults.js';
export { LeaderElection, type LeaderElectionOptions } from './leader-election.js';
export { SchedulerMetrics } from './scheduler-metrics.js';
export { CADENCE_DEFAULTS, nextRunAt, unitKindFor, periodMsOf, jitterOf, dailyFilesRange, type CadenceOptions } from './cadence.js';
export { SchedulerEnv } from './env.js';
export { runScheduler, type RunSchedulerOptions, type RunningScheduler } from './run-scheduler.js';
