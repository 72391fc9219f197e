export { FleetWorker, type FleetWorkerOptions } from './fleet-worker.js';
export { openStoreAtStart, runWorker } from './run-worker.js';
export { UnitExecutor, type UnitContext, type UnitExecutorOptions, type UnitOutcome, type UnitProgress } from './unit-executor.js';
export { VenueRunner, type VenueRunnerOptions, type RunnerCounters } from './venue-runner.js';
export { WorkerEnv } from './worker-env.js';
export { WorkerMetrics } from './worker-metrics.js';
export { openWorkerSpool } from './worker-spool.js';
