import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ValidationError } from '@tickfleet/core';

/** A single Redis or a Redis Cluster: everything tickfleet does with Redis works on either. */
export type RedisClient = Redis | Cluster;

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

/**
 * An ioredis client for `url`, configured as BullMQ expects:
 * - `redis://host:port` / `rediss://…`: one server;
 * - `redis+cluster://host1:port1,host2:port2,…` (or `rediss+cluster://`): a Redis Cluster, found
 *   from these seed nodes. Every multi-key operation tickfleet runs (BullMQ's scripts, venue
 *   control, job locks) stays inside one venue's hash tag, so it works across slots.
 */
export function createRedisConnection(url: string, options: RedisConnectionOptions = {}): RedisClient {
  const blocking = options.blocking ?? true;
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: blocking ? null : 2,
    enableReadyCheck: true,
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
    ...options.redis,
  };
  const cluster = /^(rediss?)\+cluster:\/\/(.+)$/.exec(url);
  if (!cluster) return new Redis(url, redisOptions);
  const tls = cluster[1] === 'rediss';
  const [hosts = '', ...rest] = cluster[2]!.split('/');
  void rest;
  const auth = hosts.includes('@') ? hosts.slice(0, hosts.lastIndexOf('@')) : '';
  const nodes = (auth ? hosts.slice(auth.length + 1) : hosts).split(',').map((hostPort) => {
    const m = /^([^:]+):(\d+)$/.exec(hostPort);
    if (!m) throw new ValidationError('REDIS_URL', 'redis+cluster://host:port[,host:port…]', url);
    return { host: m[1]!, port: Number(m[2]) };
  });
  const [user, password] = auth ? auth.split(':').map(decodeURIComponent) : [];
  return new Cluster(nodes, {
    redisOptions: { ...redisOptions, ...(user ? { username: user } : {}), ...(password ? { password } : {}), ...(tls ? { tls: {} } : {}) },
    enableReadyCheck: true,
  });
}
