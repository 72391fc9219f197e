import { Redis, type RedisOptions } from 'ioredis';

export interface RedisConnectionOptions {
  /**
   * Blocking clients (BullMQ Workers, QueueEvents) must retry commands forever across
   * reconnects (`maxRetriesPerRequest: null`); BullMQ refuses them otherwise. Producers and
   * control clients may prefer to fail fast so a tick or request errors instead of hanging.
   * @defaultValue true
   */
  blocking?: boolean;
  /** Name shown by `CLIENT LIST`. */
  connectionName?: string;
  /** Extra ioredis options. */
  redis?: RedisOptions;
}

/** An ioredis client for `url` (`redis://` or `rediss://`), configured as BullMQ expects. */
export function createRedisConnection(url: string, options: RedisConnectionOptions = {}): Redis {
  const blocking = options.blocking ?? true;
  return new Redis(url, {
    maxRetriesPerRequest: blocking ? null : 2,
    enableReadyCheck: true,
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
    ...options.redis,
  });
}
