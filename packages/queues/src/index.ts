export { QUEUE_PREFIX, queueNameFor, venueKey, assertPrefix } from './names.js';
export { QueuedUnit } from './queued-unit.js';
export { unitJobId } from './unit-job-id.js';
export { unitPriority, LIVE_PRIORITY_BASE, BACKFILL_PRIORITY_BASE } from './priorities.js';
export { TRANSIENT_RETRY, transientRetryDelayMs, UNIT_JOB_OPTIONS } from './job-options.js';
export {
  connectRedis,
  createRedisConnection,
  maskRedisUrl,
  watchRedis,
  type ConnectRedisOptions,
  type RedisClient,
  type RedisConnectionOptions,
  type RedisWatchOptions,
} from './redis-connection.js';
export {
  VenueQueues,
  queueKey,
  type VenueQueuesOptions,
  type EnqueueOptions,
  type EnqueueOutcome,
  type EnqueueResult,
  type UnitCounts,
} from './venue-queues.js';
export { RedisMutex } from './redis-mutex.js';
export { luaCommand, type LuaCommand } from './lua-command.js';
export { freePort, startLocalRedis, startRedisOnPort, type LocalRedisServer, type StartLocalRedisOptions } from './local-redis-server.js';
