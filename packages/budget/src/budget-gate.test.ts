import { Redis } from 'ioredis';
import { BudgetExhaustedError, type Clock, RequestTooHeavyError, systemClock } from '@tickfleet/core';
import { startMongoWire } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { gateMetrics } from '../test/fixtures/gate-metrics.js';
import { clearOfMinuteEnd, startRedis, tempDir, waitFor, type TestRedis, ManualClock } from '@tickfleet/testkit';
import Database from 'better-sqlite3';
import { BudgetGate, boundaryGuardMs } from './budget-gate.js';
import { RecordedBudgets } from '../test/fixtures/recorded-budgets.js';
import { StoreOutageFallback } from './store-outage-fallback.js';
import { WorkerHeartbeat } from './venue-control/worker-heartbeat.js';

let redis: TestRedis;
const conns: Redis[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(conns.map((c) => c.quit()));
  await redis.stop();
});

/**
 * The store-outage fallback of worker `workerIds[0]` for binance (limit `limit` per minute), in a
 * fleet of `workerIds.length` live workers that all beat their heartbeat in Redis, as FleetWorker
 * wires it. Each worker has its own Redis connection.
 */
async function fleetFallbacks(clock: Clock, limit: number, workerIds: readonly string[], prefix = redis.namespace()): Promise<StoreOutageFallback[]> {
  const fallbacks = workerIds.map((id) => {
    const conn = new Redis(redis.url);
    conns.push(conn);
    return new StoreOutageFallback(conn, new WorkerHeartbeat(conn, id, { prefix, clock }), { prefix, clock });
  });
  for (const f of fallbacks) await f.configure('binance', limit, 60_000);
  // The first ones beat before the others: bring every worker up to the fleet's final count.
  for (const f of fallbacks) await f.configure('binance', limit, 60_000);
  return fallbacks;
}

/**
 * The budget gate against a real MongoDB store (the wire test server) that goes away: while the
 * store answers, every request is spent from the shared budget; once it cannot be reached, the
 * worker spends only its share `floor(limit / liveWorkers)` of the window and says so in metrics.
 */
describe('BudgetGate', () => {
  it('falls back to limit / liveWorkers per window while the store is unreachable', async () => {
    const server = await startMongoWire();
    let store: StateStore | undefined;
    try {
      store = await openStore(`${server.url}gate${Date.now()}`, { serverSelectionTimeoutMs: 300 });
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const metrics = gateMetrics();
      // Mid-window on a fixed clock, so the window's end is never within the gate's inline wait.
      const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
      const [fallback] = (await fleetFallbacks(clock, 20, ['w1', 'w2', 'w3', 'w4'])) as [StoreOutageFallback];
      expect(fallback.shareOf('binance')).toBe(5);
      const gate = new BudgetGate({
        budgets: store.budgets,
        clock,
        metrics,
        freezes: { frozenForMs: async () => 0 },
        fallback,
      });
      const fallbackGauge = async (): Promise<number | undefined> =>
        (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;

      // MongoDB budgets count windows on the server's clock ($$NOW), which is real time: a grant in
      // the last guard band of a real minute would have the gate wait for a window end that the
      // manual clock never reaches. Start the grant clear of that band, with room for a loaded
      // machine's delays before the grant and the usage read after it.
      await clearOfMinuteEnd(boundaryGuardMs(60_000) + 8000);
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
      expect(await fallbackGauge()).toBe(0);

      await server.stop();
      // The window the store went away in may be spent already: nothing from the fallback in it.
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      clock.advance(60_000);
      // floor(20 / 4) = 5 weight this window, not the full 20.
      for (let i = 0; i < 5; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      expect(await fallbackGauge()).toBe(1);
      expect(fallback.isActive('binance')).toBe(true);
    } finally {
      await store?.close().catch(() => undefined);
      await server.stop().catch(() => undefined);
    }
  }, 30_000);

  it('SQLite store locked by another connection: falls back without stalling the event loop, then marks the window spent on recovery', async () => {
    const dir = tempDir('tickfleet-gate-lock-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    let locker: Database.Database | undefined;
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const metrics = gateMetrics();
      const [fallback] = (await fleetFallbacks(clock, 20, ['w1', 'w2'])) as [StoreOutageFallback];
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics, freezes: { frozenForMs: async () => 0 }, fallback });
      const fallbackGauge = async (): Promise<number | undefined> =>
        (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });

      // Another process's long write transaction (WAL: readers go on, writers get SQLITE_BUSY).
      locker = new Database(dir.file('state.db'));
      locker.exec('BEGIN EXCLUSIVE');
      let longestStallMs = 0;
      let last = performance.now();
      const probe = setInterval(() => {
        const now = performance.now();
        longestStallMs = Math.max(longestStallMs, now - last);
        last = now;
      }, 5);
      try {
        await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
        clock.advance(60_000);
        // floor(20 / 2) = 10 weight in the next window from the fallback, then refused.
        for (let i = 0; i < 10; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
        await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      } finally {
        clearInterval(probe);
      }
      // Each attempt blocks at most the 25 ms busy_timeout; the old 5 s busy_timeout stalled for 5 s
      // per call (the bound leaves room for a loaded machine's own pauses).
      expect(longestStallMs).toBeLessThan(3000);
      expect(await fallbackGauge()).toBe(1);

      locker.exec('COMMIT');
      locker.close();
      locker = undefined;
      // The store is back mid-window: the workers' local spending is not in it, so the window is
      // marked spent (fallback allowance 10 x 2 workers) and the request waits for the next one.
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      expect(await fallbackGauge()).toBe(0);
      expect(fallback.isActive('binance')).toBe(false);
      expect((await store.budgets.usage('binance'))?.used).toBe(20);
      clock.advance(60_000);
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 3 });
      expect((await store.budgets.usage('binance'))?.used).toBe(3);
    } finally {
      locker?.close();
      await store.close();
      dir.remove();
    }
  });

  it('a worker that reaches the store while another spends its fallback share marks that window spent first', async () => {
    const dir = tempDir('tickfleet-gate-fleet-fallback-');
    // Worker b lost the store a window earlier: its fallback share starts in the window after that.
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30) - 60_000);
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const [a, b] = (await fleetFallbacks(clock, 20, ['a', 'b'])) as [StoreOutageFallback, StoreOutageFallback];
      expect(await b.tryAcquire('binance', 1)).toMatchObject({ ok: false });
      clock.advance(60_000);
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, fallback: a });
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
      // Worker b, cut off from the store, spends its share in this window (told via Redis).
      expect(await b.tryAcquire('binance', 1)).toEqual({ ok: true, used: 1, share: 10 });
      await waitFor(async () => (await a.fleetFallbackUntil('binance')) === Date.UTC(2030, 0, 1, 0, 1), 'the fleet-wide fallback mark');
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      expect((await store.budgets.usage('binance'))?.used).toBe(20);
      clock.advance(60_000);
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      expect((await store.budgets.usage('binance'))?.used).toBe(1);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it("spends a venue's requests of one turn past the first four in one store acquire of their sum", async () => {
    const dir = tempDir('tickfleet-gate-turn-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const recorded = new RecordedBudgets(store.budgets);
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
      await Promise.all(Array.from({ length: 10 }, () => gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 })));
      expect(recorded.acquires.map((a) => a.weight)).toEqual([2, 2, 2, 2, 12]);
      expect((await store.budgets.usage('binance'))?.used).toBe(20);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('fails a request heavier than the whole window at once, naming the venue, the weight and the limit', async () => {
    const dir = tempDir('tickfleet-gate-heavy-');
    const store = await openStore(dir.sqliteUrl());
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 10, periodMs: 60_000, headroom: 0.95 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock: systemClock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
      const err = await gate.beforeRequest({ venue: 'binance', endpoint: 'depth', weight: 50 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RequestTooHeavyError);
      expect(err).toMatchObject({ venue: 'binance', weight: 50, limit: 9, periodMs: 60_000, retryable: false, code: 'E_UNRECOVERABLE' });
      expect((err as Error).message).toMatch(/^binance: a request of weight 50 can never be sent: the venue's effective budget is 9 per 1m window/);
      // Nothing was spent: lighter requests still go.
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('raises the shared count to what the venue reports, never lowers it', async () => {
    const dir = tempDir('tickfleet-gate-');
    const store = await openStore(dir.sqliteUrl());
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1000, periodMs: 3_600_000, headroom: 1 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock: systemClock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      const usage = await store.budgets.usage('binance');
      expect(usage?.used).toBe(2);
      const windowStartMs = usage!.windowStartMs!;
      const response = { venue: 'binance', endpoint: 'klines', status: 200, latencyMs: 5, usedWeightWindowStartMs: windowStartMs };
      // Other clients on the same IP spent 40 more: the venue says 42.
      await gate.afterResponse({ ...response, usedWeight: 42 });
      expect((await store.budgets.usage('binance'))?.used).toBe(42);
      // A report below the shared count changes nothing.
      await gate.afterResponse({ ...response, usedWeight: 10 });
      expect((await store.budgets.usage('binance'))?.used).toBe(42);
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(44);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('sends nothing in the last stretch of a fixed window: a grant made there stays spent and the request goes out in the next window', async () => {
    const dir = tempDir('tickfleet-gate-guard-');
    // 300 ms before a minute boundary: inside the 1 s guard of a 60 s window.
    const windowEndMs = Date.UTC(2030, 0, 1, 0, 1, 0);
    const clock = new ManualClock(windowEndMs - 300);
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    try {
      expect(boundaryGuardMs(60_000)).toBe(1000);
      expect(boundaryGuardMs(10_000)).toBe(500);
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
      let sent = 0;
      const first = gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 }).then(() => (sent += 1));
      await waitFor(async () => (await store.budgets.usage('binance'))?.used === 2, 'the grant made inside the guard');
      // A second request meets the guard before the store: it does not spend again.
      const second = gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 }).then(() => (sent += 1));
      await new Promise((r) => setTimeout(r, 400));
      expect(sent).toBe(0);
      expect((await store.budgets.usage('binance'))?.used).toBe(2);

      clock.advance(300);
      await Promise.all([first, second]);
      expect(sent).toBe(2);
      const next = await store.budgets.usage('binance');
      expect(next).toMatchObject({ windowStartMs: windowEndMs, used: 4 });
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it("reserves a unit's weight in one acquire; its requests spend it without the store until its window's guard, then acquire again", async () => {
    const dir = tempDir('tickfleet-gate-reserve-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'fred', baseUrl: 'https://api.stlouisfed.org', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const recorded = new RecordedBudgets(store.budgets);
      let frozenMs = 0;
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => frozenMs }, maxInlineWaitMs: 0 });
      const request = { venue: 'fred', endpoint: 'observations', weight: 1 };
      const reservation = await gate.reserve('fred', 11);
      // The guard of the minute window starting at 00:00:00 begins 1 s before its end.
      expect(reservation).toEqual({ venue: 'fred', tokens: 11, untilMs: Date.UTC(2030, 0, 1, 0, 0, 59) });
      for (let i = 0; i < 10; i++) expect(await gate.fromReservation(request, reservation)).toBe(true);
      expect(recorded.acquires.map((a) => a.weight)).toEqual([11]);
      expect((await store.budgets.usage('fred'))?.used).toBe(11);
      // Another unit cannot reserve more than the window has left: it yields before any request.
      await expect(gate.reserve('fred', 10)).rejects.toBeInstanceOf(BudgetExhaustedError);
      // A frozen venue sends nothing, reserved or not.
      frozenMs = 5000;
      await expect(gate.fromReservation(request, reservation)).rejects.toBeInstanceOf(BudgetExhaustedError);
      frozenMs = 0;
      // In the window's guard the rest is void (left spent), and the request acquires in its own window.
      clock.set(Date.UTC(2030, 0, 1, 0, 0, 59, 500));
      expect(await gate.fromReservation(request, reservation)).toBe(false);
      expect(reservation.tokens).toBe(0);
      // Scoped requests never use a reservation.
      expect(await gate.fromReservation({ ...request, scope: 'DETR' }, { venue: 'fred', tokens: 5, untilMs: Infinity })).toBe(false);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
