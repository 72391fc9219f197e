import type { RedisClient } from '@tickfleet/queues';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alignDown, type Clock, type ConnectorInput } from '@tickfleet/core';
import { FleetVenueControl, WorkerHeartbeat } from '@tickfleet/budget';
import { createRedisConnection, type QueuedUnit, VenueQueues } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import type { TempDir } from '@tickfleet/testkit';
import { DashboardServer, type DashboardServerOptions } from '../src/index.js';

/** A clock fixed at `nowMs`, so windows, freezes and lags come out exact. */
export function fixedClock(nowMs: number): Clock {
  return { now: () => nowMs, monotonic: () => 0 };
}

/** 10 s into the current clock minute: inside one fixed window for the whole test. */
export function testNow(): number {
  return alignDown(Date.now(), '1m') + 10_000;
}

export interface TestFleet {
  now: number;
  prefix: string;
  storeUrl: string;
  spoolDir: string;
  store: StateStore;
  redis: RedisClient;
  queues: VenueQueues;
  control: FleetVenueControl;
  liveness: WorkerHeartbeat;
  close(): Promise<void>;
}

export function connector(venue: string, limit: number, extra: Partial<ConnectorInput> = {}): ConnectorInput {
  return {
    venue,
    baseUrl: `http://127.0.0.1:1/${venue}`,
    rateLimit: { policy: 'fixed-window', limit, periodMs: 60_000, headroom: 1 },
    maxInflight: 4,
    ...extra,
  };
}

/** `n` live units of one job of `venue`, each with its own due time. */
export function liveUnits(venue: string, symbol: string, n: number, now: number): QueuedUnit[] {
  return Array.from({ length: n }, (_, i) => ({
    kind: 'incremental' as const,
    venue,
    jobId: `${venue}:${symbol}:1m:ohlcv`,
    dueAt: now - (n - i) * 60_000,
    nextRunAt: now + 60_000,
    enqueuedAt: now,
  }));
}

/** Writes one spool segment holding `n` frames (`[u32 LE length][JSON envelope]`). */
export function writeSpoolSegment(dir: string, receivedAtMs: number, n: number): number {
  mkdirSync(dir, { recursive: true });
  const frames = Array.from({ length: n }, (_, i) => {
    const body = Buffer.from(JSON.stringify({ venue: 'binance', channel: 'trades', symbol: 'BTC/USDT', receivedAtMs: receivedAtMs + i, payload: { i } }));
    const len = Buffer.alloc(4);
    len.writeUInt32LE(body.length);
    return Buffer.concat([len, body]);
  });
  const data = Buffer.concat(frames);
  writeFileSync(join(dir, 'spool_000001.dat'), data);
  return data.length;
}

/** A real SQLite store and the Redis-side fleet parts under a fresh prefix; time fixed at `now` where the parts allow it. */
export async function openTestFleet(redisUrl: string, prefix: string, dir: TempDir, now: number): Promise<TestFleet> {
  const clock = fixedClock(now);
  const storeUrl = dir.sqliteUrl('state.db');
  const store = await openStore(storeUrl, { clock });
  const redis = createRedisConnection(redisUrl, { blocking: false });
  const queues = new VenueQueues(redis, { prefix });
  const control = new FleetVenueControl(redis, { prefix, clock });
  const liveness = new WorkerHeartbeat(redis, 'fixture', { prefix, clock });
  return {
    now,
    prefix,
    storeUrl,
    spoolDir: join(dir.path, 'spool'),
    store,
    redis,
    queues,
    control,
    liveness,
    close: async () => {
      await queues.close();
      await store.close();
      await redis.quit();
    },
  };
}

/**
 * A started dashboard over the test fleet: fresh status on every request (no cache), queue
 * discovery every 100 ms, plus `options`.
 */
export async function startDashboard(fleet: TestFleet, options: Partial<DashboardServerOptions> = {}): Promise<DashboardServer> {
  const server = new DashboardServer({
    redis: fleet.redis,
    store: fleet.store,
    prefix: fleet.prefix,
    spoolDir: fleet.spoolDir,
    discoverMs: 100,
    statusMaxAgeMs: 0,
    ...options,
  });
  await server.start();
  return server;
}
