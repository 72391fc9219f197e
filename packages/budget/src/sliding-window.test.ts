import { BudgetExhaustedError, type RateLimitPolicyName } from '@tickfleet/core';
import { marketTokenIds, polymarketMarkets, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { openStore, type StateStore } from '@tickfleet/store';
import { ManualClock, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { gateMetrics } from '../test/fixtures/gate-metrics.js';
import { BudgetGate } from './budget-gate.js';
import type { BudgetsRepo } from './budget-types.js';
import { openRedisBudgets } from './redis-budgets.js';

/** A window boundary; the fleet starts 3/4 into a window, where a fixed window's grants bunch up with the next one's. */
const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);
const START = T0 + 1500;
/** Polymarket's CLOB `/book` limit shrunk to 30 per sliding 2 s (the emulation counts any sliding window). */
const LIMIT = 30;
const WINDOW_MS = 2000;

/**
 * Polymarket's limits slide. Two workers (each its own store connection or Redis connection and its
 * own BudgetGate) keep 8 `/book` requests each in flight against the emulation on one manual clock
 * (so arrivals are exactly the grant times, whatever the machine's load); a refused request yields
 * and the clock jumps to the earliest retry time. The emulation counts the largest weight in any
 * sliding window and refuses (429, no queueing here) what is over: the ground truth.
 */
describe('a sliding-window budget at the documented numbers never exceeds them in any window', () => {
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
    clock = new ManualClock(START);
    mock = await startMockVenue({
      clock,
      scenario: { seed: 7, venues: { polymarket: { markets: 12, limit: { requests: LIMIT, windowMs: WINDOW_MS, maxDelayMs: 0 } } } },
    });
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await mock.stop();
    dir.remove();
  });

  async function gates(policy: RateLimitPolicyName, backend: 'store' | 'redis'): Promise<BudgetGate[]> {
    const stores: StateStore[] = await Promise.all([0, 1].map(() => openStore(dir.sqliteUrl(), { clock })));
    for (const s of stores) closers.push(() => s.close());
    await stores[0]!.connectors.upsert({
      venue: 'polymarket',
      baseUrl: mock.baseUrl('polymarket'),
      rateLimit: { policy, limit: LIMIT, periodMs: WINDOW_MS, headroom: 1 },
    });
    const prefix = redis.namespace();
    return Promise.all(
      stores.map(async (store) => {
        let budgets: BudgetsRepo = store.budgets;
        if (backend === 'redis') {
          const r = await openRedisBudgets(redis.url, { connectors: store.connectors, prefix, clock, connectorCacheMs: 0, serverClock: clock });
          closers.push(() => r.close());
          budgets = r;
        }
        return new BudgetGate({ budgets, clock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 }, maxInlineWaitMs: 0 });
      }),
    );
  }

  /** Sends `total` granted `/book` requests from the gates, 8 in flight each; returns the emulation's stats. */
  async function drive(all: BudgetGate[], total: number) {
    const token = marketTokenIds(polymarketMarkets(7, 12)[0]!)[0]!;
    let sent = 0;
    for (let round = 0; sent < total; round++) {
      if (round > 10_000) throw new Error('no progress');
      const retries: number[] = [];
      await Promise.all(
        all.flatMap((gate) =>
          Array.from({ length: 8 }, async () => {
            try {
              await gate.beforeRequest({ venue: 'polymarket', endpoint: 'book', weight: 1 });
            } catch (err) {
              if (!(err instanceof BudgetExhaustedError)) throw err;
              retries.push(err.retryAtMs);
              return;
            }
            sent += 1;
            const res = await fetch(`${mock.baseUrl('polymarket')}/book?token_id=${token}`);
            await res.arrayBuffer();
          }),
        ),
      );
      if (retries.length === all.length * 8) clock.set(Math.min(...retries));
    }
    return mock.stats().venues.polymarket;
  }

  for (const backend of ['store', 'redis'] as const) {
    it(`sliding-window (${backend}): 150 requests over 5 windows, never more than ${LIMIT} in any sliding ${WINDOW_MS} ms, none refused`, async () => {
      const stats = await drive(await gates('sliding-window', backend), 150);
      expect(stats).toMatchObject({ responses429: 0, overLimitRequests: 0, responses2xx: 150 });
      expect(stats.maxWindowWeight).toBe(LIMIT);
      // The venue's limit was used: 150 requests took about 5 windows (plus a slot's lag per window).
      expect(clock.now() - START).toBeLessThan(5 * (WINDOW_MS + WINDOW_MS / 20));
    });
  }

  it('a fixed window at the same numbers puts twice the limit into one sliding window (what the policy is for)', async () => {
    const stats = await drive(await gates('fixed-window', 'store'), 60);
    // 30 granted at 1.5 s into a window, 30 more as the next begins, 0.5 s later: the venue refuses them.
    expect(stats.overLimitRequests).toBeGreaterThan(0);
  });
});
