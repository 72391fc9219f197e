export { Scheduler, SCHEDULER_DEFAULTS, type SchedulerOptions, type TickResult } from './scheduler.js';
export { LeaderElection, type LeaderElectionOptions } from './leader-election.js';
export { SchedulerMetrics } from './scheduler-metrics.js';
export { DEFAULT_CADENCE, nextRunAt, unitKindFor, periodMsOf, jitterOf, dailyFilesRange, type CadenceOptions } from './cadence.js';
export { SchedulerEnv } from './env.js';
export { runScheduler, type RunSchedulerOptions, type RunningScheduler } from './run-scheduler.js';
