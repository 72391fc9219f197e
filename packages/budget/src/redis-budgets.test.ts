import { Redis } from 'ioredis';
import { BudgetExhaustedError, StoreUnavailableError, systemClock } from '@tickfleet/core';
import { createRedisConnection, queueKey, venueKey } from '@tickfleet/queues';
import { startMongoWire } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { gateMetrics } from '../test/fixtures/gate-metrics.js';
import {
  clearOfMinuteEnd,
  startRedis,
  startRedisCluster,
  startRestartableRedis,
  tempDir,
  waitFor,
  type TempDir,
  type TestRedis,
  type TestRedisCluster,
} from '@tickfleet/testkit';
import { budgetContractCases, type BudgetFixture } from '../test/budget-contract.js';
import { BudgetGate } from './budget-gate.js';
import { openRedisBudgets, type RedisBudgets } from './redis-budgets.js';
import { StoreOutageFallback } from './store-outage-fallback.js';
import { WorkerHeartbeat } from './venue-control/worker-heartbeat.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

let dir: TempDir;
let redis: TestRedis;
const opened: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  dir = tempDir('tickfleet-redis-budget-');
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close().catch(() => undefined)));
  await redis.stop();
  dir.remove();
});

/** A fresh SQLite store (the connectors) and a Redis budget on its own key prefix reading them. */
async function fixture(
  url = redis.url,
  options: { connectorCacheMs?: number } = {},
): Promise<BudgetFixture & { store: StateStore; budgets: RedisBudgets; prefix: string }> {
  const ns = redis.namespace();
  const store = await openStore(dir.sqliteUrl(`${ns}.db`));
  // Reads the connector on every call, as the store budgets do: the contract pauses and resumes
  // connectors and expects the next acquire to follow.
  const budgets = await openRedisBudgets(url, { connectors: store.connectors, prefix: ns, connectorCacheMs: options.connectorCacheMs ?? 0 });
  opened.push(store, budgets);
  return { store, connectors: store.connectors, budgets, prefix: ns };
}

describe('BudgetsRepo contract: redis (rate-limiter-flexible + GCRA script)', () => {
  let current: BudgetFixture;
  beforeEach(async () => {
    current = await fixture();
  });
  budgetContractCases(() => current);
});

describe('RedisBudgetsRepo', () => {
  it('keys each clock window separately, with the venue hash tag', async () => {
    const { store, budgets } = await fixture();
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 10, periodMs: 60_000, headroom: 1 } });
    const r = await budgets.acquire('binance', 3);
    if (!r.ok) throw new Error('first acquire refused');
    const conn = new Redis(redis.url);
    try {
      const keys = await conn.keys(`*{binance}:budget:fw:*`);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(new RegExp(`:venue:\\{binance\\}:budget:fw:${Math.floor(r.atMs / 60_000)}$`));
      expect(await conn.get(keys[0]!)).toBe('3');
      // The key outlives the rest of its window (whole seconds, as the library sets TTLs), never more
      // than a window and 2 s past the decision. Read as the absolute expiry, which does not shrink
      // while a loaded machine takes its time between the grant and this read.
      const [[, time], [, ttl]] = (await conn.multi().time().pttl(keys[0]!).exec()) as [[null, [string, string]], [null, number]];
      const expiresAtMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000) + ttl;
      expect(expiresAtMs).toBeGreaterThanOrEqual(r.windowEndMs!);
      expect(expiresAtMs).toBeLessThanOrEqual(r.atMs + 62_000);
    } finally {
      conn.disconnect();
    }
  });

  it('never stores a refused weight: the window reads what was granted, by every reader, at every moment', async () => {
    const { store, budgets, prefix } = await fixture();
    // An hour's window: the test's acquires all land in one.
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 11, periodMs: 3_600_000, headroom: 1 } });
    expect(await budgets.acquire('binance', 8)).toMatchObject({ ok: true, used: 8 });
    const conn = new Redis(redis.url);
    try {
      // This test's key only: the file's other tests budget binance in the same Redis.
      const [key] = await conn.keys(`${prefix}:*{binance}:budget:fw:*`);
      expect(key).toBeDefined();
      // Twenty refusals racing one another: none is ever counted, so no read sees more than 8.
      const refusals = Array.from({ length: 20 }, () => budgets.acquire('binance', 4));
      const reads: string[] = [];
      while (reads.length < 20) reads.push((await conn.get(key!)) ?? '0');
      expect((await Promise.all(refusals)).map((r) => (r.ok ? 'granted' : `refused at ${r.reason}`))).toEqual(Array(20).fill('refused at exhausted'));
      expect(new Set([...reads, (await conn.get(key!)) ?? '0'])).toEqual(new Set(['8']));
      expect((await budgets.usage('binance'))?.used).toBe(8);
      // What still fits is granted, up to the limit exactly.
      expect(await budgets.acquire('binance', 3)).toMatchObject({ ok: true, used: 11 });
      expect(await budgets.acquire('binance', 1)).toMatchObject({ ok: false });
      expect(await conn.get(key!)).toBe('11');
    } finally {
      conn.disconnect();
    }
  });

  it('a process whose clock is an hour ahead charges the windows the others charge, with retry times on its own clock', async () => {
    const { store, budgets, prefix } = await fixture();
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 5, periodMs: 60_000, headroom: 1 } });
    const ahead = { now: () => Date.now() + 3_600_000, monotonic: () => performance.now() };
    const skewed = await openRedisBudgets(redis.url, { connectors: store.connectors, prefix, connectorCacheMs: 0, clock: ahead });
    opened.push(skewed);
    const a = await budgets.acquire('binance', 3);
    const b = await skewed.acquire('binance', 2);
    if (!a.ok || !b.ok) throw new Error('a grant was refused');
    // Same window, one count: the skewed process decided on the Redis server's timeline.
    expect(b.windowStartMs).toBe(a.windowStartMs);
    expect(b.used).toBe(5);
    expect(b.clockOffsetMs).toBeLessThan(-3_590_000);
    expect(skewed.clockOffsetMs).toBeLessThan(-3_590_000);
    expect(budgets.clockOffsetMs).toBe(0);
    const refused = await skewed.acquire('binance', 1);
    if (refused.ok) throw new Error('a sixth weight was granted');
    // The retry time is the window's end, translated onto the skewed clock.
    expect(refused.retryAtMs - ahead.now()).toBeLessThanOrEqual(60_000);
    expect(refused.retryAtMs - ahead.now()).toBeGreaterThan(0);
  });

  it('keeps coordinating through a store outage with the connectors it last read', async () => {
    const mongo = await startMongoWire();
    const store = await openStore(`${mongo.url}rb${Date.now()}`, { serverSelectionTimeoutMs: 300 });
    try {
      const budgets = await openRedisBudgets(redis.url, { connectors: store.connectors, prefix: redis.namespace(), connectorCacheMs: 1 });
      opened.push(budgets);
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 5, periodMs: 60_000, headroom: 1 } });
      // The three acquires count in one real clock minute: start clear of its end (a loaded machine
      // took several seconds for the store to stop).
      await clearOfMinuteEnd(15_000);
      expect(await budgets.acquire('binance', 2)).toMatchObject({ ok: true, used: 2 });
      await mongo.stop();
      await expect(store.connectors.get('binance')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await budgets.acquire('binance', 3)).toMatchObject({ ok: true, used: 5 });
      expect(await budgets.acquire('binance', 1)).toMatchObject({ ok: false, reason: 'exhausted' });
    } finally {
      await store.close().catch(() => undefined);
      await mongo.stop().catch(() => undefined);
    }
  }, 30_000);

  it('reports a stopped Redis as StoreUnavailableError, naming its URL without the password', async () => {
    const server = await startRestartableRedis();
    try {
      const admin = new Redis(server.url);
      await admin.config('SET', 'requirepass', 's3cret-pw');
      admin.disconnect();
      const url = `redis://:s3cret-pw@127.0.0.1:${server.port}`;
      const { store, budgets } = await fixture(url);
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 5, periodMs: 60_000, headroom: 1 } });
      expect(await budgets.acquire('binance', 1)).toMatchObject({ ok: true });
      await server.kill();
      const err = await budgets.acquire('binance', 1).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).message).toContain('budget Redis at redis://:***@127.0.0.1');
      expect((err as Error).message).not.toContain('s3cret-pw');
      await expect(budgets.usage('binance')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(budgets.observe('binance', 4, Math.floor(Date.now() / 60_000) * 60_000)).rejects.toBeInstanceOf(StoreUnavailableError);
      // Opening against a server that is down names the URL masked too.
      const refused = await openRedisBudgets(url, { connectors: store.connectors, waitMs: 500 }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(refused?.message).toContain('redis://:***@127.0.0.1');
      expect(refused?.message).not.toContain('s3cret-pw');
    } finally {
      await server.stop();
    }
  }, 30_000);
});

describe('RedisBudgetsRepo on a real Redis Cluster', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(() => cluster.stop());

  it('budgets fixed-window and GCRA venues, each in the slot of its venue queue', async () => {
    const { store, budgets, prefix: ns } = await fixture(cluster.url);
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example.com', rateLimit: { limit: 4, periodMs: 60_000, headroom: 1 } });
    await store.connectors.upsert({
      venue: 'kraken',
      baseUrl: 'https://kraken.example.com',
      rateLimit: { policy: 'gcra', limit: 2, periodMs: 60_000, headroom: 1 },
    });
    // The window's acquires and its usage read count in one real clock minute.
    await clearOfMinuteEnd(10_000);
    const a = await budgets.acquire('binance', 3);
    if (!a.ok) throw new Error('binance acquire refused');
    await budgets.observe('binance', 4, a.windowStartMs!);
    expect(await budgets.acquire('binance', 1)).toMatchObject({ ok: false, reason: 'exhausted' });
    expect(await budgets.usage('binance')).toMatchObject({ used: 4, limit: 4 });
    expect(await budgets.acquire('kraken', 2)).toMatchObject({ ok: true, used: 2 });
    expect(await budgets.acquire('kraken', 1)).toMatchObject({ ok: false, reason: 'exhausted' });

    const conn = createRedisConnection(cluster.url, { blocking: false });
    try {
      for (const venue of ['binance', 'kraken']) {
        const budgetKey = venueKey(ns, venue, venue === 'binance' ? `budget:fw:${Math.floor(a.windowStartMs! / 60_000)}` : 'budget:gcra');
        const [budgetSlot, queueSlot] = await Promise.all([conn.cluster('KEYSLOT', budgetKey), conn.cluster('KEYSLOT', queueKey(ns, venue, 'wait'))]);
        expect(budgetSlot).toBe(queueSlot);
        expect(await conn.exists(budgetKey)).toBe(1);
      }
    } finally {
      conn.disconnect();
    }
  }, 60_000);
});

/**
 * A budget Redis apart from the fleet's Redis that is stopped mid-run: the gate meets the same
 * StoreUnavailableError a store outage raises. The worker spends what its lease still holds in
 * the window the budget granted it, never more than the budget counted for that window, and
 * nothing in later windows until the budget Redis is back; then the shared budget resumes.
 */
describe('BudgetGate on the Redis budget', () => {
  it('spends only its lease while the budget Redis is stopped, nothing after it, then resumes the shared budget', async () => {
    const LIMIT = 100;
    const PERIOD_MS = 2000;
    const budgetRedis = await startRestartableRedis();
    const fleetConns: Redis[] = [];
    try {
      const { store, budgets } = await fixture(budgetRedis.url);
      await store.connectors.upsert({
        venue: 'binance',
        baseUrl: 'https://binance.example.com',
        rateLimit: { limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 },
      });
      const conn = new Redis(redis.url);
      fleetConns.push(conn);
      const fallback = new StoreOutageFallback(new WorkerHeartbeat(conn, 'w1', { prefix: redis.namespace() }));
      await fallback.configure('binance');
      const metrics = gateMetrics();
      const gate = new BudgetGate({ budgets, clock: systemClock, metrics, freezes: { frozenForMs: async () => 0 }, fallback, maxInlineWaitMs: 0 });
      /** Requests this worker's gate let go, per clock window (counted at the grant, on this clock). */
      const sent = new Map<number, number>();
      /** One request of weight 1 through the gate: whether it may go, else when to come back. */
      const request = async (): Promise<{ ok: true } | { ok: false; retryAtMs: number }> => {
        try {
          await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
          const ws = Math.floor(Date.now() / PERIOD_MS) * PERIOD_MS;
          sent.set(ws, (sent.get(ws) ?? 0) + 1);
          return { ok: true };
        } catch (err) {
          if (err instanceof BudgetExhaustedError) return { ok: false, retryAtMs: err.retryAtMs };
          throw err;
        }
      };

      await waitFor(async () => (await request()).ok, 'a grant from the Redis budget');
      // Requests one after another within a window: the lease grows past one request's weight.
      let usage = await budgets.usage('binance');
      for (let i = 0; i < 40; i++) {
        await request();
        usage = await budgets.usage('binance');
        if (usage && usage.used > (sent.get(usage.windowStartMs!) ?? 0)) break;
      }
      const windowStartMs = usage!.windowStartMs!;
      const counted = usage!.used;
      expect(counted).toBeGreaterThan(sent.get(windowStartMs) ?? 0);
      expect(fallback.isActive('binance')).toBe(false);

      await budgetRedis.kill();
      // Three windows without the budget: what was sent in each window never exceeds what the budget counted.
      const until = Date.now() + 3 * PERIOD_MS;
      while (Date.now() < until) {
        const r = await request();
        if (!r.ok) await sleep(Math.min(r.retryAtMs, until) - Date.now());
      }
      expect(fallback.isActive('binance')).toBe(true);
      expect((await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value).toBe(1);
      expect(sent.get(windowStartMs) ?? 0).toBeLessThanOrEqual(counted);
      expect([...sent].filter(([ws, n]) => ws > windowStartMs && n > 0)).toEqual([]);

      await budgetRedis.start();
      await waitFor(async () => (await request()).ok && !fallback.isActive('binance'), 'the shared budget after the budget Redis came back', {
        timeoutMs: 20_000,
      });
      expect((await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value).toBe(0);
      expect((await budgets.usage('binance'))?.used).toBeGreaterThanOrEqual(1);
    } finally {
      fleetConns.forEach((c) => c.disconnect());
      await budgetRedis.stop();
    }
  }, 60_000);
});
