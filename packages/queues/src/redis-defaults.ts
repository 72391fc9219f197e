/**
 * Defaults of the Redis connections and of the local redis-server, in one place: the options
 * below and the CLI's connections take them from here, so a default changes once.
 */
export const REDIS_DEFAULTS = Object.freeze({
  /** Connections are blocking (retry commands forever across reconnects) unless asked otherwise. */
  blocking: true,
  /** How long `connectRedis` waits for the first `ready`: a role or CLI command waiting for its Redis at start then exits with one line. */
  connectWaitMs: 10_000,
  /** How often `watchRedis` probes its connection. */
  watchIntervalMs: 1000,
  /** Ports `startLocalRedis` tries before it gives up. */
  localStartAttempts: 5,
});
