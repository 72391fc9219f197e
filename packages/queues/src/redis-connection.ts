import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { RedisUnavailableError, ValidationError } from '@tickfleet/core';
import { REDIS_DEFAULTS } from './redis-defaults.js';

/** A single Redis or a Redis Cluster: everything tickfleet does with Redis works on either. */
export type RedisClient = Redis | Cluster;

export interface RedisConnectionOptions {
  /**
   * Blocking clients (BullMQ Workers, QueueEvents) must retry commands forever across
   * reconnects (`maxRetriesPerRequest: null`); BullMQ refuses them otherwise. Producers and
   * control clients may prefer to fail fast so a tick or request errors instead of hanging.
   * @defaultValue {@link REDIS_DEFAULTS.blocking}
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
  const blocking = options.blocking ?? REDIS_DEFAULTS.blocking;
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

/** `url` with any password replaced by `***`, for messages and logs. */
export function maskRedisUrl(url: string): string {
  return url.replace(
    /^([a-z+]+:\/\/)([^@/]*)@/i,
    (_m, scheme: string, auth: string) => `${scheme}${auth.includes(':') ? `${auth.slice(0, auth.indexOf(':'))}:***` : '***'}@`,
  );
}

export interface ConnectRedisOptions extends RedisConnectionOptions {
  /** How long to wait for the first `ready` before giving up. @defaultValue {@link REDIS_DEFAULTS.connectWaitMs} */
  waitMs?: number;
}

/**
 * A connection that has answered: waits (at most `waitMs`) until the client is ready, else
 * disconnects it and throws a RedisUnavailableError naming the (masked) URL and the last
 * connection error, so a command or role ends with one line instead of retrying silently forever.
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<RedisClient> {
  const waitMs = options.waitMs ?? REDIS_DEFAULTS.connectWaitMs;
  const client = createRedisConnection(url, options);
  let lastError: Error | undefined;
  const onError = (err: Error): void => {
    lastError = err;
  };
  client.on('error', onError);
  try {
    // The timeout rejects with nothing: the catch below builds the one error callers see.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(), waitMs);
      client.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } catch {
    client.disconnect();
    const cause = lastError ? `: ${lastError.message}` : '';
    throw new RedisUnavailableError(maskRedisUrl(url), `Redis at ${maskRedisUrl(url)} did not answer within ${Math.round(waitMs / 1000)} s${cause}`, {
      cause: lastError,
    });
  } finally {
    client.off('error', onError);
  }
  return client;
}

export interface RedisWatchOptions {
  /** Give up after Redis has been unreachable this long. */
  giveUpMs: number;
  /** Called once with the reason when Redis stayed unreachable for `giveUpMs`. */
  onLost(err: RedisUnavailableError): void;
  /** How often the connection is probed. @defaultValue {@link REDIS_DEFAULTS.watchIntervalMs} */
  intervalMs?: number;
}

/**
 * Watches a role's Redis with its own small connection: a PING every `intervalMs`; when no PING
 * has succeeded for `giveUpMs`, `onLost` is called (the role then exits non-zero instead of
 * retrying forever with nobody noticing). A Redis restarted within `giveUpMs` goes unnoticed, as it
 * should: BullMQ and ioredis reconnect by themselves. Returns a stop function.
 */
export function watchRedis(url: string, options: RedisWatchOptions): () => void {
  const intervalMs = options.intervalMs ?? REDIS_DEFAULTS.watchIntervalMs;
  const client = createRedisConnection(url, { blocking: false, connectionName: 'tickfleet-watch', redis: { maxRetriesPerRequest: 0, lazyConnect: false } });
  let lastError: Error | undefined;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  let lastOk = Date.now();
  let done = false;
  const timer = setInterval(() => {
    client.ping().then(
      () => {
        lastOk = Date.now();
        lastError = undefined;
      },
      (err: unknown) => {
        // The connection's own error (ECONNREFUSED, …) says more than the failed PING.
        lastError ??= err instanceof Error ? err : undefined;
        if (done || Date.now() - lastOk < options.giveUpMs) return;
        done = true;
        stop();
        const cause = lastError ? `: ${lastError.message}` : '';
        options.onLost(
          new RedisUnavailableError(maskRedisUrl(url), `Redis at ${maskRedisUrl(url)} unreachable for ${Math.round(options.giveUpMs / 1000)} s${cause}`, {
            cause: lastError,
          }),
        );
      },
    );
  }, intervalMs);
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    client.disconnect();
  };
  return stop;
}
