import { type Command } from 'commander';
import type { VenueQueues, RedisClient } from '@tickfleet/queues';
import type { StateStore } from '@tickfleet/store';
import { jsonOption, printJson, printTable } from '../output.js';
import { fleetRedis } from '../fleet-context.js';
import { withStore } from '../store-context.js';

export interface FleetRedisContext {
  redis: RedisClient;
  prefix: string;
  queues: VenueQueues;
}

/**
 * Connects to the running fleet's Redis (REDIS_URL or `tickfleet up`'s fleet file), runs `fn`
 * with its venue queues, and always disconnects. Commands fail fast instead of retrying forever.
 */
export async function withFleetRedis<T>(fn: (ctx: FleetRedisContext) => Promise<T>): Promise<T> {
  const { redisUrl, prefix } = fleetRedis();
  // Loaded on use: BullMQ and ioredis cost ~150 ms of start-up that most commands never need.
  const { connectRedis, VenueQueues } = await import('@tickfleet/queues');
  const redis = await connectRedis(redisUrl, { blocking: false, connectionName: 'tickfleet-cli' });
  const queues = new VenueQueues(redis, { prefix });
  try {
    return await fn({ redis, prefix, queues });
  } finally {
    await queues.close();
    await redis.quit().catch(() => redis.disconnect());
  }
}

export interface QueueRow {
  venue: string;
  queue: string;
  waiting: number;
  prioritized: number;
  active: number;
  delayed: number;
  failed: number;
  completed: number;
  /** Remaining freeze of the queue's limiter (ms); 0 when units flow. */
  rateLimitTtlMs: number;
  /** BullMQ global concurrency of the queue (the fleet-wide in-flight cap); null when unset. */
  globalConcurrency: number | null;
}

async function queueRows(store: StateStore, queues: VenueQueues): Promise<QueueRow[]> {
  const venues = (await store.connectors.list()).map((c) => c.venue).sort();
  return Promise.all(
    venues.map(async (venue) => {
      const [counts, rateLimitTtlMs, globalConcurrency] = await Promise.all([queues.counts(venue), queues.frozenForMs(venue), queues.globalConcurrency(venue)]);
      return { venue, queue: queues.queue(venue).name, ...counts, rateLimitTtlMs, globalConcurrency };
    }),
  );
}

export function registerQueues(program: Command): void {
  program
    .command('queues')
    .description('per venue queue: units by state, rate-limit (freeze) TTL and global concurrency (env: REDIS_URL)')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const rows = await withStore(cmd, (store) => withFleetRedis(({ queues }) => queueRows(store, queues)));
      if (opts.json) return printJson(rows);
      printTable(
        ['VENUE', 'WAITING', 'PRIORITIZED', 'ACTIVE', 'DELAYED', 'FAILED', 'COMPLETED', 'RATE-LIMIT TTL', 'GLOBAL CONC'],
        rows.map((r) => [
          r.venue,
          r.waiting,
          r.prioritized,
          r.active,
          r.delayed,
          r.failed,
          r.completed,
          r.rateLimitTtlMs > 0 ? `${r.rateLimitTtlMs}ms` : '-',
          r.globalConcurrency,
        ]),
      );
    });
}
