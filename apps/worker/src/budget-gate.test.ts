import { LocalFallbackBudget } from '@tickfleet/budget';
import { BudgetExhaustedError, ManualClock, systemClock } from '@tickfleet/core';
import { startMongoWire } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { createRegistry } from '@tickfleet/telemetry';
import { tempDir, waitFor } from '@tickfleet/testkit';
import Database from 'better-sqlite3';
import { BudgetGate, boundaryGuardMs, type FallbackBudget } from './budget-gate.js';
import { WorkerMetrics } from './worker-metrics.js';

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
      const registry = createRegistry('worker', { defaultMetrics: false });
      const metrics = new WorkerMetrics(registry);
      // Mid-window on a fixed clock, so the window's end is never within the gate's inline wait.
      const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
      const fallback = new LocalFallbackBudget({ limit: 20, periodMs: 60_000, clock });
      fallback.setLiveWorkers(4);
      const gate = new BudgetGate({
        store,
        clock,
        metrics,
        freezes: { frozenForMs: async () => 0 },
        fallback: fallbackFor(fallback),
      });
      const fallbackGauge = async (): Promise<number | undefined> => (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;

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
      expect(fallback.active).toBe(true);
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
      const metrics = new WorkerMetrics(createRegistry('worker', { defaultMetrics: false }));
      const fallback = new LocalFallbackBudget({ limit: 20, periodMs: 60_000, clock });
      fallback.setLiveWorkers(2);
      const gate = new BudgetGate({ store, clock, metrics, freezes: { frozenForMs: async () => 0 }, fallback: fallbackFor(fallback) });
      const fallbackGauge = async (): Promise<number | undefined> => (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;
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
      // Each attempt blocks at most the 25 ms busy_timeout; the old 5 s busy_timeout stalled for 5 s per call.
      expect(longestStallMs).toBeLessThan(1500);
      expect(await fallbackGauge()).toBe(1);

      locker.exec('COMMIT');
      locker.close();
      locker = undefined;
      // The store is back mid-window: the workers' local spending is not in it, so the window is
      // marked spent (fallback allowance 10 x 2 workers) and the request waits for the next one.
      await expect(gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 1 })).rejects.toBeInstanceOf(BudgetExhaustedError);
      expect(await fallbackGauge()).toBe(0);
      expect(fallback.active).toBe(false);
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
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
    const store = await openStore(dir.sqliteUrl('state.db'), { clock });
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 20, periodMs: 60_000, headroom: 1 } });
      const budget = new LocalFallbackBudget({ limit: 20, periodMs: 60_000, clock });
      budget.setLiveWorkers(2);
      let fleetFallbackUntil = 0;
      const gate = new BudgetGate({
        store,
        clock,
        metrics: new WorkerMetrics(createRegistry('worker', { defaultMetrics: false })),
        freezes: { frozenForMs: async () => 0 },
        fallback: { ...fallbackFor(budget), fleetFallbackUntil: async () => fleetFallbackUntil },
      });
      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
      // Another worker, cut off from the store, spends its share in this window (told via Redis).
      fleetFallbackUntil = Date.UTC(2030, 0, 1, 0, 1);
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

  it('raises the shared count to what the venue reports, never lowers it', async () => {
    const dir = tempDir('tickfleet-gate-');
    const store = await openStore(dir.sqliteUrl());
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1000, periodMs: 3_600_000, headroom: 1 } });
      const gate = new BudgetGate({ store, clock: systemClock, metrics: new WorkerMetrics(createRegistry('worker', { defaultMetrics: false })), freezes: { frozenForMs: async () => 0 } });
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
      const metrics = new WorkerMetrics(createRegistry('worker', { defaultMetrics: false }));
      const gate = new BudgetGate({ store, clock, metrics, freezes: { frozenForMs: async () => 0 } });
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
});

/** The gate's view of one venue's LocalFallbackBudget, as FleetWorker wires it. */
function fallbackFor(budget: LocalFallbackBudget): FallbackBudget {
  return {
    tryAcquire: (_venue, weight) => {
      budget.activate();
      return budget.tryAcquire(weight);
    },
    isActive: () => budget.active,
    deactivate: () => budget.deactivate(),
    fleetAllowance: () => budget.share * budget.liveWorkers,
    fleetFallbackUntil: async () => 0,
  };
}
