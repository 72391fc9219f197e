import { Redis } from 'ioredis';
import { BudgetExhaustedError, type Clock, RequestTooHeavyError, systemClock } from '@tickfleet/core';
import { startMongoWire } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { gateMetrics } from '../test/fixtures/gate-metrics.js';
import { clearOfMinuteEnd, startRedis, tempDir, waitFor, type TestRedis, ManualClock } from '@tickfleet/testkit';
import Database from 'better-sqlite3';
import { BudgetGate } from './budget-gate.js';
import { boundaryGuardMs, windowGuardMs } from './window-guard.js';
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

/** The store-outage state of one worker for binance, as FleetWorker wires it (a heartbeat in Redis). */
async function outageState(clock: Clock): Promise<StoreOutageFallback> {
  const conn = new Redis(redis.url);
  conns.push(conn);
  const fallback = new StoreOutageFallback(new WorkerHeartbeat(conn, 'w1', { prefix: redis.namespace(), clock }), { clock });
  await fallback.configure('binance');
  return fallback;
}

/** Requests of weight 1 one after another until the gate refuses one; resolves how many went. */
async function untilRefused(gate: BudgetGate, max = 100): Promise<number> {
  for (let i = 0; i < max; i++) {
    try {
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
    } catch (err) {
      if (err instanceof BudgetExhaustedError) return i;
      throw err;
    }
  }
  return max;
}

/**
 * The budget gate against a real store that goes away: while the store answers, requests are
 * spent from the shared budget (in leases); once it cannot be reached, the worker spends only what
 * its lease still holds, then nothing, in this window and the next, and says so in metrics.
 */
describe('BudgetGate', () => {
  it('spends only its lease while the MongoDB store is unreachable, then nothing', async () => {
    const server = await startMongoWire();
    let store: StateStore | undefined;
    try {
      store = await openStore(`${server.url}gate${Date.now()}`, { serverSelectionTimeoutMs: 300 });
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const metrics = gateMetrics();
      // Mid-window on a fixed clock, so the window's end is never within the gate's inline wait.
      const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
      const fallback = await outageState(clock);
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics, freezes: { frozenForMs: async () => 0 }, fallback, maxInlineWaitMs: 0 });
      const fallbackGauge = async (): Promise<number | undefined> =>
        (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;

      // MongoDB budgets count windows on the server's clock ($$NOW), which is real time: a grant in
      // the last guard band of a real minute would have the gate wait for a window end that the
      // manual clock never reaches. Start the grants clear of that band, with room for a loaded
      // machine's delays before the grants and the usage read after them.
      await clearOfMinuteEnd(boundaryGuardMs(60_000) + 8000);
      // One after another: each lease spent within its window doubles the next (1, 1, 2, 4, 8, 10).
      for (let i = 0; i < 10; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      const counted = (await store.budgets.usage('binance'))!.used;
      expect(counted).toBeGreaterThan(10);
      expect(await fallbackGauge()).toBe(0);

      await server.stop();
      // The rest of the lease goes; then nothing, in this window or the next.
      expect(await untilRefused(gate)).toBe(counted - 10);
      expect(await fallbackGauge()).toBe(1);
      expect(fallback.isActive('binance')).toBe(true);
      clock.advance(60_000);
      expect(await untilRefused(gate)).toBe(0);
    } finally {
      await store?.close().catch(() => undefined);
      await server.stop().catch(() => undefined);
    }
  }, 30_000);

  it('SQLite store locked by another connection: spends only its lease without stalling the event loop, and resumes the shared count', async () => {
    const dir = tempDir('tickfleet-gate-lock-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    let locker: Database.Database | undefined;
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const metrics = gateMetrics();
      const fallback = await outageState(clock);
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics, freezes: { frozenForMs: async () => 0 }, fallback, maxInlineWaitMs: 0 });
      const fallbackGauge = async (): Promise<number | undefined> =>
        (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;
      // Leases of 1, 1 and 2 (at most 10% of the limit): one weight left in the lease.
      for (let i = 0; i < 3; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      expect((await store.budgets.usage('binance'))?.used).toBe(4);

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
        expect(await untilRefused(gate)).toBe(1);
        clock.advance(60_000);
        expect(await untilRefused(gate)).toBe(0);
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
      // The store is back mid-window: nothing was spent without it, so its count is the truth and
      // the window's full limit is there to spend.
      expect(await untilRefused(gate)).toBe(20);
      expect(await fallbackGauge()).toBe(0);
      expect(fallback.isActive('binance')).toBe(false);
      expect((await store.budgets.usage('binance'))?.used).toBe(20);
    } finally {
      locker?.close();
      await store.close();
      dir.remove();
    }
  });

  it("spends the requests that waited for a venue's acquire in one store acquire of their sum", async () => {
    const dir = tempDir('tickfleet-gate-turn-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const recorded = new RecordedBudgets(store.budgets);
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
      await Promise.all(Array.from({ length: 10 }, () => gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 })));
      // The first one's acquire (one store acquire of a venue at a time per worker), then one for the nine that waited.
      expect(recorded.acquires.map((a) => a.weight)).toEqual([2, 18]);
      expect((await store.budgets.usage('binance'))?.used).toBe(20);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('strands no weight in a window: a lease rest too small for the next request joins its grant', async () => {
    const dir = tempDir('tickfleet-gate-carry-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 120, periodMs: 60_000, headroom: 1 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      // Leases of 1, 2, 4, 8, 12 (a tenth of the limit), then what the window has left: rests a
      // request of weight 3 or 2 cannot spend alone. The window ends full but for less than one request.
      let sent = 0;
      let refusedWeight = 0;
      for (let i = 0; refusedWeight === 0; i++) {
        const weight = i % 2 === 0 ? 3 : 2;
        await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight }).then(
          () => (sent += weight),
          (err: unknown) => (err instanceof BudgetExhaustedError ? (refusedWeight = weight) : Promise.reject(err)),
        );
      }
      expect(120 - sent).toBeLessThan(refusedWeight);
      expect((await store.budgets.usage('binance'))!.used - sent).toBeLessThan(refusedWeight);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('never fails requests as too heavy because together they weigh more than the window: it asks what the window holds', async () => {
    const dir = tempDir('tickfleet-gate-sum-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      // 19 per window (as 20 at headroom 0.95): ten requests of weight 2 waiting together weigh 20.
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 0.95 } });
      const recorded = new RecordedBudgets(store.budgets);
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      const outcomes = await Promise.all(
        Array.from({ length: 11 }, () =>
          gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 }).then(
            () => 'sent',
            (err: unknown) => (err instanceof BudgetExhaustedError ? 'yielded' : err),
          ),
        ),
      );
      // None of them is failed as too heavy: 8 more fit the window (17 of 19), the rest yield to the next.
      expect(outcomes.filter((o) => o === 'sent')).toHaveLength(8);
      expect(outcomes.filter((o) => o === 'yielded')).toHaveLength(3);
      // No acquire asked for more than the window holds; the requests' 2 each within its 19.
      expect(Math.max(...recorded.acquires.map((a) => a.weight))).toBeLessThanOrEqual(19);
      expect((await store.budgets.usage('binance'))?.used).toBeGreaterThanOrEqual(18);
      expect((await store.budgets.usage('binance'))?.used).toBeLessThanOrEqual(19);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('sends nothing of a dropped lease: the next request asks the store, which refuses a paused connector', async () => {
    const dir = tempDir('tickfleet-gate-drop-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const recorded = new RecordedBudgets(store.budgets);
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      // One after another, each lease spent in its window doubles the next: a lease with weight left.
      for (let i = 0; i < 5; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      const leased = (await store.budgets.usage('binance'))!.used;
      expect(leased).toBeGreaterThan(6);
      const acquires = recorded.acquires.length;
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      expect(recorded.acquires).toHaveLength(acquires);

      await store.connectors.setStatus('binance', 'paused');
      gate.dropLease('binance');
      const err = await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BudgetExhaustedError);
      expect(recorded.acquires).toHaveLength(acquires + 1);
      expect((await store.budgets.usage('binance'))!.used).toBe(leased);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('drops its lease when the store refuses a paused connector: a lighter request sends none of its rest', async () => {
    const dir = tempDir('tickfleet-gate-refusal-drop-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      for (let i = 0; i < 5; i++) await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 });
      const leased = (await store.budgets.usage('binance'))!.used;
      const rest = leased - 5;
      expect(rest).toBeGreaterThan(0);

      await store.connectors.setStatus('binance', 'paused');
      // Heavier than the rest: it asks the store, which refuses the paused connector.
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: rest + 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      // The rest could cover this one; it is gone with the refusal.
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      expect((await store.budgets.usage('binance'))!.used).toBe(leased);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('a bad weight fails its own request only; a paused venue refuses every waiting request; venues keep apart', async () => {
    const dir = tempDir('tickfleet-gate-apart-');
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl(), { clock });
    try {
      for (const venue of ['binance', 'kraken'])
        await store.connectors.upsert({ venue, baseUrl: `https://${venue}.example`, rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const recorded = new RecordedBudgets(store.budgets);
      const gate = new BudgetGate({ budgets: recorded, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      const send = (venue: string, weight: number): Promise<string> =>
        gate.beforeRequest({ venue, endpoint: 'klines', weight }).then(
          () => 'ok',
          (err: unknown) => (err instanceof Error ? err.constructor.name : String(err)),
        );

      expect(await Promise.all([send('binance', 2), send('binance', 0.5), send('binance', 3), send('kraken', 2)])).toEqual([
        'ok',
        'ValidationError',
        'ok',
        'ok',
      ]);
      expect((await store.budgets.usage('binance'))?.used).toBe(5);
      expect((await store.budgets.usage('kraken'))?.used).toBe(2);
      expect(recorded.acquires.every((a) => Number.isInteger(a.weight))).toBe(true);

      await store.connectors.setStatus('kraken', 'paused');
      gate.dropLease('kraken');
      expect(await Promise.all([send('kraken', 1), send('kraken', 1), send('kraken', 1)])).toEqual(Array(3).fill('BudgetExhaustedError'));
      expect((await store.budgets.usage('kraken'))?.used).toBe(2);
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

  it("keeps the venue requests' measured latency free at a fixed window's end: a grant that could not arrive in time waits for the next window", async () => {
    const dir = tempDir('tickfleet-gate-latency-');
    const windowEndMs = Date.UTC(2030, 0, 1, 0, 1, 0);
    const clock = new ManualClock(windowEndMs - 3000);
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    try {
      // Latency plus 10 ms, never below the fixed floor (5%, at most 1 s), never above half the window.
      expect(windowGuardMs(60_000, 0)).toBe(1000);
      expect(windowGuardMs(1000, 120)).toBe(130);
      expect(windowGuardMs(1000, 900)).toBe(500);
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } });
      const gate = new BudgetGate({ budgets: store.budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      const request = { venue: 'binance', endpoint: 'klines', weight: 1 };
      // Nothing measured yet: the floor (1 s), so 3 s before the end the request goes.
      await gate.beforeRequest(request);
      // The venue answers in 3.5 s: a request sent now would arrive after the window's end.
      for (let i = 0; i < 20; i++) await gate.afterResponse({ ...request, status: 200, latencyMs: 3500 });
      const refused = await gate.beforeRequest(request).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(BudgetExhaustedError);
      expect((refused as BudgetExhaustedError).retryAtMs).toBe(windowEndMs);
      // Its grant stays spent in the old window (under-using it, never over-spending the next).
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
      clock.set(windowEndMs);
      await gate.beforeRequest(request);
      // Sent in the next window, on a lease of 2 (the last lease was spent within its window).
      expect(await store.budgets.usage('binance')).toMatchObject({ windowStartMs: windowEndMs, used: 2 });
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
