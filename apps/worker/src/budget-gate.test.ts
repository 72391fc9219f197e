import { LocalFallbackBudget } from '@tickfleet/budget';
import { BudgetExhaustedError, ManualClock, systemClock } from '@tickfleet/core';
import { startMongoWire } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { createRegistry } from '@tickfleet/telemetry';
import { tempDir } from '@tickfleet/testkit';
import { BudgetGate } from './budget-gate.js';
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
        fallback: {
          tryAcquire: (_venue, weight) => {
            fallback.activate();
            return fallback.tryAcquire(weight);
          },
        },
      });
      const fallbackGauge = async (): Promise<number | undefined> => (await metrics.fallbackActive.get()).values.find((v) => v.labels.venue === 'binance')?.value;

      await gate.beforeRequest({ venue: 'binance', endpoint: 'klines', weight: 2 });
      expect((await store.budgets.usage('binance'))?.used).toBe(2);
      expect(await fallbackGauge()).toBe(0);

      await server.stop();
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
});
