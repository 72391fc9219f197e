import { randomUUID } from 'node:crypto';
import { startRedisServer } from '@tickfleet/queues';

export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** A fresh namespace for key prefixes, so tests never share keys. */
  namespace(): string;
  stop(): Promise<void>;
}

/**
 * A private `redis-server` (from PATH) on a free port with persistence off, or the server at
 * `REDIS_URL` when set (then `stop` leaves it running; isolation comes from `namespace()`).
 */
export async function startRedis(): Promise<TestRedis> {
  const namespace = (): string => `t${randomUUID().slice(0, 8)}`;
  const external = process.env.REDIS_URL;
  if (external) {
    const u = new URL(external);
    return { url: external, port: Number(u.port || 6379), namespace, stop: async () => undefined };
  }
  const server = await startRedisServer();
  return { url: server.url, port: server.port, namespace, stop: () => server.stop() };
}
