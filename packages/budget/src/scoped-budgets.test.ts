import { Redis } from 'ioredis';
import { BudgetExhaustedError, type Pacing } from '@tickfleet/core';
import { startMockVenue, xetraFileName, type MockVenue, type ScopeStats } from '@tickfleet/mock-venue';
import { openStore, type StateStore } from '@tickfleet/store';
import { ManualClock, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { gateMetrics } from '../test/fixtures/gate-metrics.js';
import { BudgetGate } from './budget-gate.js';
import { FleetVenueControl } from './venue-control/fleet-venue-control.js';
import { ScopedBudgets } from './scoped-budgets.js';

const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);
const MARKETS = ['DETR', 'DFRA', 'DGAT', 'DEUR'] as const;
type Market = (typeof MARKETS)[number];

/**
 * Per-market budgets of Xetra as two workers use them: each with its own store connection (one
 * SQLite file), its own Redis connection and its own BudgetGate, spending before every request to
 * the emulation, on one manual clock shared with the emulation (so the emulation's arrival log
 * shows exactly the times the budget granted, whatever the machine's load). A refused request
 * yields (BudgetExhaustedError) and the clock moves to the earliest retry time, as units do.
 */
describe('ScopedBudgets: Xetra markets, each a fleet-wide budget within one venue-wide limiter', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mock: MockVenue;
  let clock: ManualClock;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    dir = tempDir();
    clock = new ManualClock(T0);
    // The emulation's defaults for Xetra: 5 requests per 2 s, per market.
    mock = await startMockVenue({ clock });
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await mock.stop();
    dir.remove();
  });

  async function workers(n: number, pacing: Pacing): Promise<{ gates: BudgetGate[]; store: StateStore }> {
    const prefix = redis.namespace();
    const stores = await Promise.all(Array.from({ length: n }, () => openStore(dir.sqliteUrl(), { clock })));
    for (const s of stores) closers.push(() => s.close());
    await stores[0]!.connectors.upsert({ venue: 'xetra', baseUrl: mock.baseUrl('xetra'), rateLimit: { limit: 5, periodMs: 2000, headroom: 1 }, pacing });
    const gates = stores.map((store) => {
      const conn = new Redis(redis.url);
      closers.push(() => conn.quit());
      return new BudgetGate({
        budgets: store.budgets,
        scopes: new ScopedBudgets(conn, { connectors: store.connectors, prefix, clock, connectorCacheMs: 0 }),
        freezes: new FleetVenueControl(conn, { prefix, clock }),
        clock,
        metrics: gateMetrics(),
        maxInlineWaitMs: 0,
      });
    });
    return { gates, store: stores[0]! };
  }

  /**
   * Every gate keeps one request per market in flight until each market got `perMarket` answers:
   * granted requests go to the emulation at once (a download of DETR and DFRA, a listing of the
   * others); when every gate was refused, the clock jumps to the earliest retry time. Returns how
   * many requests each gate sent.
   */
  async function drive(gates: BudgetGate[], perMarket: number, markets: readonly Market[]): Promise<number[]> {
    const sent = gates.map(() => 0);
    const done = new Map<string, number>(markets.map((m) => [m, 0]));
    const file = (m: Market): string =>
      m === 'DETR' || m === 'DFRA' ? `${mock.baseUrl('xetra')}/download/${xetraFileName(m, T0 - 60_000 * 30)}` : `${mock.baseUrl('xetra')}/${m}-posttrade`;
    for (let round = 0; [...done.values()].some((v) => v < perMarket); round++) {
      if (round > 10_000) throw new Error('no progress');
      const retries: number[] = [];
      let tried = 0;
      await Promise.all(
        gates.flatMap((gate, g) =>
          markets
            .filter((m) => done.get(m)! < perMarket)
            .map(async (market) => {
              tried += 1;
              try {
                await gate.beforeRequest({ venue: 'xetra', endpoint: 'download', weight: 1, scope: market });
              } catch (err) {
                if (!(err instanceof BudgetExhaustedError)) throw err;
                retries.push(err.retryAtMs);
                return;
              }
              sent[g]! += 1;
              const res = await fetch(file(market));
              await res.arrayBuffer();
              done.set(market, done.get(market)! + 1);
            }),
        ),
      );
      if (retries.length === tried) clock.set(Math.min(...retries));
    }
    return sent;
  }

  function scopes(): Record<string, ScopeStats> {
    return mock.stats().venues.xetra.scopes ?? {};
  }

  /** Accepted arrivals of every market, in time order: what the venue saw from the fleet. */
  function venueArrivals(): number[] {
    return Object.values(scopes())
      .flatMap((s) => s.arrivals)
      .sort((a, b) => a - b);
  }

  /** The most arrivals in any window of `windowMs` (half-open, as the venue counts): a sliding count over the ground truth. */
  function maxInSlidingWindow(arrivals: number[], windowMs: number): number {
    let max = 0;
    for (let i = 0, j = 0; i < arrivals.length; i++) {
      while (arrivals[i]! - arrivals[j]! >= windowMs) j++;
      max = Math.max(max, i - j + 1);
    }
    return max;
  }

  it('even pacing (the default): four markets of two workers share one limiter, 5 per 2 s in any window, 400 ms apart', async () => {
    const { gates, store } = await workers(2, 'even');
    const connector = await store.connectors.get('xetra');
    expect(ScopedBudgets.spacingMs(connector!)).toBe(400);
    const sent = await drive(gates, 10, MARKETS);
    expect(sent.every((n) => n > 0)).toBe(true);
    const stats = mock.stats().venues.xetra;
    expect(stats).toMatchObject({ responses429: 0, overLimitRequests: 0, responses2xx: 40 });
    for (const m of MARKETS) expect(scopes()[m]).toMatchObject({ requests: 10, overLimitRequests: 0, limit: 5, windowMs: 2000 });
    // One limiter across the markets: consecutive arrivals at the venue, whichever market, are at
    // least 400 ms apart, so no 2 s window (aligned or sliding) holds more than the venue's 5.
    const arrivals = venueArrivals();
    expect(arrivals).toHaveLength(40);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(400);
    expect(maxInSlidingWindow(arrivals, 2000)).toBe(5);
    expect(Math.max(...stats.windows.map((w) => w.weight))).toBe(5);
  });

  it('burst pacing: up to the limit back to back across the markets, then nothing until the oldest is a period old', async () => {
    const { gates } = await workers(2, 'burst');
    await drive(gates, 5, ['DETR', 'DFRA']);
    expect(mock.stats().venues.xetra).toMatchObject({ responses429: 0, overLimitRequests: 0 });
    for (const m of ['DETR', 'DFRA']) expect(scopes()[m]!.overLimitRequests).toBe(0);
    // Two bursts of 5 (both markets together) at the same instant, a whole period apart.
    expect(venueArrivals()).toEqual([T0, T0 + 2000].flatMap((t) => Array(5).fill(t)));
    expect(maxInSlidingWindow(venueArrivals(), 2000)).toBe(5);
  });

  it('a paused connector or an unknown venue refuses every scope; a bad scope name is refused by name', async () => {
    const { store } = await workers(1, 'even');
    const conn = new Redis(redis.url);
    closers.push(() => conn.quit());
    const scoped = new ScopedBudgets(conn, { connectors: store.connectors, prefix: redis.namespace(), clock, connectorCacheMs: 0 });
    await store.connectors.setStatus('xetra', 'paused');
    expect(await scoped.acquire('xetra', 'DETR', 1)).toMatchObject({ ok: false, reason: 'paused' });
    expect(await scoped.acquire('kraken', 'DETR', 1)).toMatchObject({ ok: false, reason: 'unknown-venue' });
    await expect(scoped.acquire('xetra', 'DE TR', 1)).rejects.toThrow(/invalid scope/);
  });
});
