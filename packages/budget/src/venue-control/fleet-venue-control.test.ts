import { Redis } from 'ioredis';
import { WORKER_LIVENESS_MS } from '@tickfleet/core';
import { startRedis, type TestRedis, ManualClock } from '@tickfleet/testkit';
import { Worker } from 'bullmq';
import { type QueuedUnit, queueNameFor, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { aimdLimitsFor, DEFAULT_AIMD_LIMITS, startConcurrency, type AimdLimits } from './aimd-settings.js';
import { FleetVenueControl, freezeEscalationFor, type AimdChange, type FreezeEscalation } from './fleet-venue-control.js';
import { WorkerHeartbeat } from './worker-heartbeat.js';

let redis: TestRedis;
const clients: Redis[] = [];

beforeAll(async () => {
  redis = await startRedis();
  for (let i = 0; i < 8; i++) clients.push(new Redis(redis.url));
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
  await redis.stop();
});

const LIMITS: AimdLimits = { ...DEFAULT_AIMD_LIMITS, min: 1, max: 16, increaseAfterMs: 1000, stableMs: 1000, minSamples: 20 };

/** One FleetVenueControl per Redis client, as N worker processes would have. */
function fleet(clock: ManualClock, limits: AimdLimits = LIMITS, prefix = redis.namespace()): FleetVenueControl[] {
  return clients.map((c) => {
    const control = new FleetVenueControl(c, { prefix, clock });
    control.configure('binance', limits);
    return control;
  });
}

describe('FleetVenueControl', () => {
  it('freezes a venue until a time and never shortens the freeze', async () => {
    const clock = new ManualClock();
    const [a, b] = fleet(clock) as [FleetVenueControl, FleetVenueControl];
    const t = clock.now();
    expect(await a.frozenUntil('binance')).toBeNull();
    expect(await a.freeze('binance', t + 60_000, '418')).toEqual({ untilMs: t + 60_000, cause: '418' });
    expect(await b.freeze('binance', t + 5_000, '429')).toEqual({ untilMs: t + 60_000, cause: '418' });
    expect(await b.frozenUntil('binance')).toBe(t + 60_000);
    expect(await b.freeze('binance', t + 90_000, 'manual')).toEqual({ untilMs: t + 90_000, cause: 'manual' });
    expect(await a.frozenUntil('kraken')).toBeNull();
    clock.advance(90_001);
    expect(await a.frozenUntil('binance')).toBeNull();
  });

  it('halves once when many workers report the same 429 at once, then again for a later incident', async () => {
    const clock = new ManualClock();
    const controls = fleet(clock);
    expect(await controls[0]!.concurrency('binance')).toBe(16);
    const steps = await Promise.all(controls.flatMap((c) => [1, 2, 3].map(() => c.onRateLimited('binance', clock.now() + 2000))));
    expect(steps.filter((s) => s.change === 'halve')).toHaveLength(1);
    expect(await controls[3]!.concurrency('binance')).toBe(8);
    expect(await controls[3]!.frozenUntil('binance')).toBe(clock.now() + 2000);
    for (const expected of [4, 2, 1, 1]) {
      clock.advance(1000);
      await Promise.all(controls.map((c) => c.onRateLimited('binance')));
      expect(await controls[5]!.concurrency('binance')).toBe(expected);
    }
  });

  it('adds at most one per increaseAfterMs fleet-wide, however many workers report', async () => {
    const clock = new ManualClock();
    const controls = fleet(clock);
    await controls[0]!.onRateLimited('binance'); // 16 -> 8, window starts now
    const increases: number[] = [];
    for (let round = 1; round <= 30; round++) {
      clock.advance(100);
      const steps = await Promise.all(controls.flatMap((c) => [0, 1].map(() => c.reportOutcome('binance', { ok: true, latencyMs: 20 }))));
      increases.push(steps.filter((s) => s.change === 'increase').length);
    }
    // 3 s of clean operation at 1 s per step: exactly 3 increases, one per interval.
    expect(increases.reduce((a, b) => a + b, 0)).toBe(3);
    expect(Math.max(...increases)).toBe(1);
    expect(await controls[7]!.concurrency('binance')).toBe(11);
  });

  it('subtracts one on a high failure ratio or p95 across the fleet', async () => {
    const clock = new ManualClock();
    const controls = fleet(clock);
    // 8 workers x 5 outcomes, 40% failures: two full windows of 20 -> two decreases.
    const steps = await Promise.all(
      controls.flatMap((c, w) => [0, 1, 2, 3, 4].map((i) => c.reportOutcome('binance', { ok: (w * 5 + i) % 5 >= 2, latencyMs: 30 }))),
    );
    expect(steps.filter((s) => s.change === 'decrease')).toHaveLength(2);
    expect(await controls[0]!.concurrency('binance')).toBe(14);
    await Promise.all(Array.from({ length: 20 }, (_, i) => controls[i % 8]!.reportOutcome('binance', { ok: true, latencyMs: 20_000 })));
    const snap = await controls[1]!.snapshot('binance');
    expect(snap).toMatchObject({ concurrency: 13, min: 1, max: 16, windowOutcomes: 0 });
  });

  it('derives the limiter BullMQ obeys from the freeze record, in one step, and reset clears both', async () => {
    const clock = new ManualClock(Date.now());
    const prefix = redis.namespace();
    const [control] = fleet(clock, LIMITS, prefix) as [FleetVenueControl];
    const queues = new VenueQueues(clients[0]!, { prefix });
    try {
      const t = clock.now();
      expect(await control.freeze('binance', t + 30_000, '418')).toEqual({ untilMs: t + 30_000, cause: '418' });
      expect(await queues.frozenForMs('binance')).toBeGreaterThan(25_000);
      expect(await queues.frozenForMs('binance')).toBeLessThanOrEqual(30_000);
      // The queue got the never-tripping rate limit BullMQ needs before it honours the limiter.
      expect((await queues.queue('binance').getGlobalRateLimit())?.max).toBeGreaterThan(1e9);
      expect(await control.frozenForMs('binance')).toBe(30_000);
      // A shorter freeze changes neither the record nor the limiter.
      expect(await control.onRateLimited('binance', t + 1000, '429')).toMatchObject({ frozenUntilMs: t + 30_000 });
      expect(await queues.frozenForMs('binance')).toBeGreaterThan(25_000);
      expect(await control.freeze('kraken', t - 1, 'manual')).toBeNull();
      expect(await queues.frozenForMs('kraken')).toBe(0);
      await control.reset('binance');
      expect(await control.freezeOf('binance')).toBeNull();
      expect(await queues.frozenForMs('binance')).toBe(0);
    } finally {
      await queues.close();
    }
  });

  it("holds the venue's units on every worker until the freeze ends, other venues untouched", async () => {
    const prefix = redis.namespace();
    const control = new FleetVenueControl(clients[0]!, { prefix });
    const queues = new VenueQueues(clients[1]!, { prefix });
    const workers: Worker[] = [];
    try {
      const startedAt: Record<string, number> = {};
      for (const venue of ['binance', 'kraken']) {
        workers.push(
          new Worker<QueuedUnit>(queueNameFor(venue), async (job) => void (startedAt[job.data.venue] = Date.now()), { connection: { url: redis.url }, prefix }),
        );
      }
      // The workers are connected before the freeze begins: on a loaded machine their start could
      // otherwise take up the freeze, and kraken's unit would not run inside it.
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      const now = Date.now();
      expect(await control.freeze('binance', now + 3000, '429')).toEqual({ untilMs: now + 3000, cause: '429' });
      const unit = (venue: string): QueuedUnit => ({ kind: 'incremental', venue, jobId: `${venue}:BTC/USDT:1m:ohlcv`, dueAt: 1, nextRunAt: 2, enqueuedAt: 0 });
      await queues.enqueue([unit('binance'), unit('kraken')]);
      await waitFor(() => startedAt.binance, 'binance unit to run after the freeze', { timeoutMs: 60_000 });
      // kraken is untouched by binance's freeze (it ran first); binance waited the freeze out (the
      // limiter key's expiry, less Redis's 1 ms expiry resolution).
      expect(startedAt.kraken).toBeLessThan(startedAt.binance!);
      expect(startedAt.binance).toBeGreaterThanOrEqual(now + 2990);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await queues.close();
    }
  });

  it('backs off a failing book instrument fleet-wide, doubling up to the cap, until it succeeds', async () => {
    const prefix = redis.namespace();
    const [a, b] = clients.slice(0, 2).map((c) => new FleetVenueControl(c, { prefix })) as [FleetVenueControl, FleetVenueControl];
    const job = 'binance:BTC/USDT:book';
    const opts = { baseMs: 1000, maxMs: 6000 };
    // Two workers share the streak; the delay is exactly base * 2^(streak - 1), capped: no random part.
    expect(await a.bookBackoffMs('binance', job, opts)).toBe(1000);
    expect(await b.bookBackoffMs('binance', job, opts)).toBe(2000);
    expect(await a.bookBackoffMs('binance', job, opts)).toBe(4000);
    expect(await b.bookBackoffMs('binance', job, opts)).toBe(6000);
    expect(await a.bookBackoffMs('binance', job, opts)).toBe(6000);
    expect(await a.bookBackoffMs('binance', 'binance:ETH/USDT:book', opts)).toBe(1000);
    await b.resetBookBackoff('binance', job);
    // A new streak of the same instrument repeats the same delays.
    expect(await b.bookBackoffMs('binance', job, opts)).toBe(1000);
    expect(await a.bookBackoffMs('binance', job, opts)).toBe(2000);
  });
});

/**
 * The AIMD rules on the one instance that runs them (the Lua scripts behind FleetVenueControl),
 * step by step on a manual clock with one worker.
 */
describe('FleetVenueControl AIMD rules', () => {
  const limits = (over: Partial<AimdLimits> = {}): AimdLimits => ({ ...DEFAULT_AIMD_LIMITS, max: 16, increaseAfterMs: 1000, stableMs: 1000, ...over });
  const one = (clock: ManualClock, l: AimdLimits): FleetVenueControl => fleet(clock, l)[0]!;

  it('halves on a rate limit down to the floor, once per incident', async () => {
    const clock = new ManualClock();
    const aimd = one(clock, limits({ min: 3 }));
    expect(await aimd.concurrency('binance')).toBe(16);
    expect(await aimd.onRateLimited('binance')).toMatchObject({ concurrency: 8, change: 'halve' });
    // Same incident (requests that were already in flight): no second halving.
    expect(await aimd.onRateLimited('binance')).toMatchObject({ concurrency: 8, change: 'none' });
    clock.advance(1000);
    expect((await aimd.onRateLimited('binance')).concurrency).toBe(4);
    clock.advance(1000);
    expect((await aimd.onRateLimited('binance')).concurrency).toBe(3);
    clock.advance(1000);
    expect((await aimd.onRateLimited('binance')).concurrency).toBe(3);
  });

  it('adds one per increaseAfterMs of clean operation, up to the ceiling, not while frozen', async () => {
    const clock = new ManualClock();
    // minSamples 5: each 1 s window holds 10 outcomes (windows short of minSamples: the next test).
    const aimd = one(clock, limits({ max: 6, minSamples: 5 }));
    await aimd.onRateLimited('binance', clock.now() + 2500); // 6 -> 3, frozen 2.5 s
    const changes: AimdChange[] = [];
    for (let i = 0; i < 80; i++) {
      clock.advance(100);
      changes.push((await aimd.reportOutcome('binance', { ok: true, latencyMs: 50 })).change);
    }
    // No increase while frozen (until 2.5 s) although 1 s passed; then +1 at 2.5 s, 3.5 s, 4.5 s; 6 is the ceiling.
    expect(changes.filter((c) => c === 'increase')).toHaveLength(3);
    expect(changes.indexOf('increase')).toBe(24);
    expect(changes.lastIndexOf('increase')).toBe(44);
    expect(await aimd.concurrency('binance')).toBe(6);
  });

  it('adds one only after stableMs without a 429, at most once per increaseAfterMs', async () => {
    const clock = new ManualClock();
    const aimd = one(clock, limits({ max: 8, stableMs: 3000, minSamples: 5 }));
    await aimd.onRateLimited('binance'); // 8 -> 4, no freeze (no Retry-After, no escalation)
    const changes: AimdChange[] = [];
    for (let i = 0; i < 50; i++) {
      clock.advance(100);
      changes.push((await aimd.reportOutcome('binance', { ok: true, latencyMs: 50 })).change);
    }
    // Windows close at 1 s and 2 s without a change (the 429 is not 3 s old), then +1 at 3 s, 4 s, 5 s.
    expect(changes.filter((c) => c === 'increase')).toHaveLength(3);
    expect(changes.indexOf('increase')).toBe(29);
    expect(await aimd.concurrency('binance')).toBe(7);
  });

  it('judges a window only once it holds minSamples outcomes: a venue slower than minSamples per interval is judged over longer windows', async () => {
    // 10 outcomes a second, minSamples 20, a 1 s interval: every judgment waits for the 20th
    // outcome (2 s), up or down. Closing each interval's window with 10 outcomes judged nothing:
    // a p95 of 800 ms against p95-high 600 never brought the value down.
    const run = async (latencyMs: number, halveFirst: boolean) => {
      const clock = new ManualClock();
      const aimd = one(clock, limits({ max: 8, minSamples: 20, lowP95LatencyMs: 300, maxP95LatencyMs: 600 }));
      if (halveFirst) await aimd.onRateLimited('binance'); // 8 -> 4
      const changes: AimdChange[] = [];
      for (let i = 0; i < 50; i++) {
        clock.advance(100);
        changes.push((await aimd.reportOutcome('binance', { ok: true, latencyMs })).change);
      }
      const at = (change: AimdChange) => changes.flatMap((c, i) => (c === change ? [i] : []));
      return { decreases: at('decrease'), increases: at('increase'), concurrency: await aimd.concurrency('binance') };
    };
    // Slow answers at the ceiling: -1 at the 20th and the 40th outcome.
    expect(await run(800, false)).toEqual({ decreases: [19, 39], increases: [], concurrency: 6 });
    // Fast answers after a halving: +1 at the 20th and the 40th outcome, not every second.
    expect(await run(50, true)).toEqual({ decreases: [], increases: [19, 39], concurrency: 6 });
  });

  it('holds between the low and high thresholds (hysteresis): no increase, no decrease', async () => {
    const clock = new ManualClock();
    // p95 of 800 ms: above the low threshold (500), under the high one (2000).
    const slow = one(clock, limits({ max: 8, minSamples: 5, lowP95LatencyMs: 500, maxP95LatencyMs: 2000 }));
    await slow.onRateLimited('binance'); // 8 -> 4
    for (let i = 0; i < 100; i++) {
      clock.advance(100);
      expect((await slow.reportOutcome('binance', { ok: true, latencyMs: 800 })).change).toBe('none');
    }
    expect(await slow.concurrency('binance')).toBe(4);
    // A failure ratio of 0.15: above half the threshold (0.1), under the threshold (0.2).
    const clock2 = new ManualClock();
    const flaky = fleet(clock2, limits({ max: 8, minSamples: 20, maxFailureRatio: 0.2 }), redis.namespace())[0]!;
    await flaky.onRateLimited('binance');
    for (let i = 0; i < 100; i++) {
      clock2.advance(50);
      // 3 failures in every 20 outcomes; a 1 s window holds 20.
      expect((await flaky.reportOutcome('binance', { ok: ![5, 10, 15].includes(i % 20), latencyMs: 20 })).change).toBe('none');
    }
    expect(await flaky.concurrency('binance')).toBe(4);
  });

  it('subtracts one when the failure ratio or the p95 latency is too high', async () => {
    const clock = new ManualClock();
    const aimd = one(clock, limits({ minSamples: 10, maxFailureRatio: 0.2, maxP95LatencyMs: 500 }));
    const steps = [];
    for (let i = 0; i < 10; i++) steps.push(await aimd.reportOutcome('binance', { ok: i % 3 !== 0, latencyMs: 10 }));
    expect(steps.map((s) => s.change).filter((c) => c === 'decrease')).toHaveLength(1);
    expect(await aimd.concurrency('binance')).toBe(15);
    for (let i = 0; i < 10; i++) await aimd.reportOutcome('binance', { ok: true, latencyMs: i === 0 ? 10 : 900 });
    expect(await aimd.concurrency('binance')).toBe(14);
    // A clean window of 9 outcomes keeps it.
    for (let i = 0; i < 9; i++) await aimd.reportOutcome('binance', { ok: false, latencyMs: 10 });
    expect(await aimd.concurrency('binance')).toBe(14);
  });

  it('judges the p95 over request latencies: a long unit of fast requests never decreases, slow requests still do', async () => {
    // A Xetra market-day: one unit of 40 requests at 30 ms that took 12 minutes (pacing, parsing).
    const clock = new ManualClock();
    const aimd = one(clock, limits({ max: 8, minSamples: 20, lowP95LatencyMs: 300, maxP95LatencyMs: 600 }));
    await aimd.onRateLimited('binance'); // 8 -> 4
    const changes: AimdChange[] = [];
    for (let i = 0; i < 40; i++) {
      clock.advance(18_000);
      changes.push((await aimd.reportOutcomes('binance', [], [30])).change);
    }
    changes.push((await aimd.reportOutcomes('binance', [{ ok: true, records: 40 }])).change);
    // Judged on the requests while the unit ran: +1 at the 20th and the 40th, never -1.
    expect(changes.flatMap((c, i) => (c === 'increase' ? [i] : []))).toEqual([19, 39]);
    expect(changes).not.toContain('decrease');
    expect(await aimd.concurrency('binance')).toBe(6);
    expect(await aimd.totals('binance')).toEqual({ unitsOk: 1, records: 40 });
    // The same unit of slow requests (900 ms each) steps down once 20 are in, before the unit ends.
    const slowChanges: AimdChange[] = [];
    for (let i = 0; i < 20; i++) slowChanges.push((await aimd.reportOutcomes('binance', [], [900])).change);
    expect(slowChanges.indexOf('decrease')).toBe(19);
    expect(await aimd.concurrency('binance')).toBe(5);
    // A unit outcome carries no latency: 20 units of a window without requests judge no p95.
    for (let i = 0; i < 20; i++) await aimd.reportOutcomes('binance', [{ ok: true }]);
    expect(await aimd.snapshot('binance')).toMatchObject({ concurrency: 5, windowOutcomes: 20, windowRequests: 0 });
  });

  it('judges latency by a nearest-rank p95 (the value at rank ceil(0.95 n))', async () => {
    // Latencies 1..100: the p95 is 95. A threshold of 95 keeps the concurrency, 94 subtracts one.
    for (const [threshold, expected] of [
      [95, 16],
      [94, 15],
    ] as const) {
      const clock = new ManualClock();
      const aimd = one(clock, limits({ minSamples: 100, maxFailureRatio: 1, maxP95LatencyMs: threshold }));
      for (let latencyMs = 1; latencyMs <= 100; latencyMs++) await aimd.reportOutcome('binance', { ok: true, latencyMs });
      expect(await aimd.concurrency('binance')).toBe(expected);
    }
  });

  it('derives limits from a connector', () => {
    const l = aimdLimitsFor({ venue: 'binance', maxInflight: 8, aimd: { min: 2, increaseAfterMs: 5000, maxFailureRatio: 0.1, maxP95LatencyMs: 2000 } });
    expect(l).toMatchObject({ min: 2, max: 8, increaseAfterMs: 5000, maxFailureRatio: 0.1, maxP95LatencyMs: 2000, lowP95LatencyMs: 2000, stableMs: 30_000 });
    // Venues with documented limits start at the ceiling, opaque ones at the floor; a connector can say otherwise.
    expect(startConcurrency(l)).toBe(8);
    expect(startConcurrency(aimdLimitsFor({ venue: 'polymarket', maxInflight: 8, aimd: { min: 3 } }))).toBe(3);
    // Their floor is 2 unless set (a discovery listing holds one slot; polling keeps the other).
    expect(aimdLimitsFor({ venue: 'limitless', maxInflight: 8, aimd: {} })).toMatchObject({ min: 2, startFromFloor: true });
    expect(aimdLimitsFor({ venue: 'limitless', maxInflight: 1, aimd: {} }).min).toBe(1);
    expect(startConcurrency(aimdLimitsFor({ venue: 'binance', maxInflight: 8, aimd: { start: 'floor' } }))).toBe(1);
    // Settings stored before the low threshold existed: it defaults to 2 s, or to the high threshold when that is lower.
    const old = aimdLimitsFor({ venue: 'binance', maxInflight: 8, aimd: { min: 1, max: 3, increaseAfterMs: 1, maxFailureRatio: 0, maxP95LatencyMs: 1 } });
    expect(old).toMatchObject({ max: 3, lowP95LatencyMs: 1, restartAfterMs: 60_000 });
    // A restart period stored before it had a minimum is raised to the liveness window; 0 still never resets.
    expect(aimdLimitsFor({ venue: 'binance', maxInflight: 8, aimd: { restartAfterMs: 2000 } }).restartAfterMs).toBe(WORKER_LIVENESS_MS);
    expect(aimdLimitsFor({ venue: 'binance', maxInflight: 8, aimd: { restartAfterMs: 0 } }).restartAfterMs).toBe(0);
  });

  describe('freeze escalation after 429s', () => {
    const ESC: FreezeEscalation = { baseMs: 60_000, maxMs: 900_000, cleanMs: 60_000 };

    it('freezes a 429 without Retry-After for the base length, fleet-wide (record and queue limiter)', async () => {
      const clock = new ManualClock();
      const prefix = redis.namespace();
      const [control] = fleet(clock, LIMITS, prefix) as [FleetVenueControl];
      const queues = new VenueQueues(clients[0]!, { prefix });
      try {
        const t = clock.now();
        expect(await control.onRateLimited('binance', 0, '429', ESC)).toMatchObject({ frozenUntilMs: t + 60_000, level: 0, change: 'halve' });
        expect(await control.freezeOf('binance')).toEqual({ untilMs: t + 60_000, cause: '429' });
        expect(await queues.frozenForMs('binance')).toBeGreaterThan(55_000);
        expect(await queues.frozenForMs('binance')).toBeLessThanOrEqual(60_000);
      } finally {
        await queues.close();
      }
    });

    it('doubles the freeze for each 429 that follows a freeze within the clean period, up to the cap', async () => {
      const clock = new ManualClock();
      const [control] = fleet(clock) as [FleetVenueControl];
      const lengths: number[] = [];
      for (let i = 0; i < 7; i++) {
        const t = clock.now();
        const step = await control.onRateLimited('binance', 0, '429', ESC);
        lengths.push(step.frozenUntilMs - t);
        // The freeze ends; the venue refuses again 1 s later (well within the clean period).
        clock.advance(step.frozenUntilMs - t + 1000);
      }
      expect(lengths).toEqual([60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]);
    });

    it('escalates once when many workers report the same incident', async () => {
      const clock = new ManualClock();
      const controls = fleet(clock);
      const t0 = clock.now();
      const first = await Promise.all(controls.flatMap((c) => [1, 2, 3].map(() => c.onRateLimited('binance', 0, '429', ESC))));
      expect(new Set(first.map((s) => s.frozenUntilMs))).toEqual(new Set([t0 + 60_000]));
      expect(first.filter((s) => s.change === 'halve')).toHaveLength(1);
      // Late answers of requests that were in flight arrive during the freeze: still the same incident.
      clock.advance(30_000);
      const late = await Promise.all(controls.map((c) => c.onRateLimited('binance', 0, '429', ESC)));
      expect(late.every((s) => s.frozenUntilMs === t0 + 60_000 && s.level === 0)).toBe(true);
      // The next incident (after the freeze, within the clean period), reported by all 8: doubled once.
      clock.advance(31_000);
      const t1 = clock.now();
      const second = await Promise.all(controls.map((c) => c.onRateLimited('binance', 0, '429', ESC)));
      expect(new Set(second.map((s) => s.frozenUntilMs))).toEqual(new Set([t1 + 120_000]));
      expect(await controls[0]!.frozenUntil('binance')).toBe(t1 + 120_000);
    });

    it('starts over after a clean period with no 429', async () => {
      const clock = new ManualClock();
      const [control] = fleet(clock) as [FleetVenueControl];
      const clean = { ...ESC, cleanMs: 45_000 };
      let step = await control.onRateLimited('binance', 0, '429', clean);
      clock.advance(step.frozenUntilMs - clock.now() + 1000);
      step = await control.onRateLimited('binance', 0, '429', clean);
      expect(step).toMatchObject({ level: 1, frozenUntilMs: clock.now() + 120_000 });
      // 120 s freeze, then 45 s without a 429: the clean period is over.
      clock.advance(120_000 + 45_000);
      step = await control.onRateLimited('binance', 0, '429', clean);
      expect(step).toMatchObject({ level: 0, frozenUntilMs: clock.now() + 60_000 });
      // Just inside the clean period after that freeze: doubled again.
      clock.advance(60_000 + 44_999);
      expect(await control.onRateLimited('binance', 0, '429', clean)).toMatchObject({ level: 1, frozenUntilMs: clock.now() + 120_000 });
    });

    it('takes a Retry-After as the first freeze and as a minimum of an escalated one', async () => {
      const clock = new ManualClock();
      const [control] = fleet(clock) as [FleetVenueControl];
      let t = clock.now();
      expect(await control.onRateLimited('binance', t + 5000, '429', ESC)).toMatchObject({ level: 0, frozenUntilMs: t + 5000 });
      // A later time from the venue during the same incident extends the freeze.
      expect(await control.onRateLimited('binance', t + 8000, '429', ESC)).toMatchObject({ level: 0, frozenUntilMs: t + 8000 });
      clock.advance(9000);
      t = clock.now();
      // Refused again right after: escalated to twice the base, the short Retry-After does not shorten it.
      expect(await control.onRateLimited('binance', t + 5000, '429', ESC)).toMatchObject({ level: 1, frozenUntilMs: t + 120_000 });
      clock.advance(121_000);
      t = clock.now();
      // A Retry-After longer than the escalated length wins.
      expect(await control.onRateLimited('binance', t + 600_000, '429', ESC)).toMatchObject({ level: 2, frozenUntilMs: t + 600_000 });
    });

    it('derives the escalation from a connector (clean period defaults to the freeze length)', () => {
      expect(freezeEscalationFor({ freezeMs: 30_000, freezeMaxMs: 600_000 })).toEqual({ baseMs: 30_000, maxMs: 600_000, cleanMs: 30_000 });
      expect(freezeEscalationFor({ freezeMs: 30_000, freezeMaxMs: 600_000, freezeResetMs: 5000 })).toEqual({ baseMs: 30_000, maxMs: 600_000, cleanMs: 5000 });
    });
  });
});

describe('fleet restart', () => {
  const RESTART = { afterMs: 60_000, startConcurrency: 1 };

  it('a fleet with no live worker for restartAfterMs starts again from the floor; one worker restarting in a live fleet does not', async () => {
    const clock = new ManualClock();
    const prefix = redis.namespace();
    const limits: AimdLimits = { ...LIMITS, max: 8, startFromFloor: true, minSamples: 5 };
    const [control] = fleet(clock, limits, prefix) as [FleetVenueControl];
    const beat = (id: string) => new WorkerHeartbeat(clients[1]!, id, { prefix, clock }).beat('binance', RESTART);
    // A new venue starts at the floor and learns up to 3.
    expect(await control.concurrency('binance')).toBe(1);
    expect(await beat('w1')).toEqual({ live: 1, fleetRestarted: false });
    expect(await beat('w2')).toEqual({ live: 2, fleetRestarted: false });
    for (let i = 0; i < 25; i++) {
      clock.advance(100);
      await control.reportOutcome('binance', { ok: true, latencyMs: 20 });
    }
    expect(await control.concurrency('binance')).toBe(3);

    // w1 restarts (a new process, a new id) 50 s later while w2 kept beating: nothing resets.
    for (let i = 0; i < 10; i++) {
      clock.advance(5000);
      await beat('w2');
    }
    expect(await beat('w1-restarted')).toEqual({ live: 2, fleetRestarted: false });
    expect(await control.concurrency('binance')).toBe(3);

    // The whole fleet is gone for 61 s: the first worker back finds a restarted fleet.
    clock.advance(61_000);
    expect(await beat('w3')).toEqual({ live: 1, fleetRestarted: true });
    expect(await control.concurrency('binance')).toBe(1);
    // Only once: the next beats see a live fleet.
    clock.advance(5000);
    expect(await beat('w4')).toEqual({ live: 2, fleetRestarted: false });
  });

  it('never resets with restartAfterMs 0, and a gap shorter than the period is no restart', async () => {
    const clock = new ManualClock();
    const prefix = redis.namespace();
    const [control] = fleet(clock, { ...LIMITS, max: 8 }, prefix) as [FleetVenueControl];
    await control.onRateLimited('binance'); // 8 -> 4
    const hb = new WorkerHeartbeat(clients[2]!, 'w1', { prefix, clock });
    await hb.beat('binance', RESTART);
    clock.advance(59_000);
    expect((await hb.beat('binance', RESTART)).fleetRestarted).toBe(false);
    clock.advance(600_000);
    expect((await hb.beat('binance', { afterMs: 0, startConcurrency: 1 })).fleetRestarted).toBe(false);
    expect(await control.concurrency('binance')).toBe(4);
  });
});

describe('venue health', () => {
  it('keeps every worker’s outcomes by cause in one fleet-wide record: N reporting at once never lose a count', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 12, 0, 30));
    const controls = fleet(clock);
    // 8 workers x 5 batches: 3 successes then 2 failures each (connection, then timeout).
    await Promise.all(
      controls.flatMap((c) =>
        [0, 1, 2, 3, 4].map(() =>
          c.reportOutcomes('binance', [
            { ok: true, latencyMs: 10 },
            { ok: true, latencyMs: 10 },
            { ok: true, latencyMs: 10 },
            { ok: false, latencyMs: 10, cause: 'connection', message: 'binance klines request failed: ECONNREFUSED' },
            { ok: false, latencyMs: 10, cause: 'timeout', message: 'GET https://api.example.com/v1/k?apiKey=SECRET&x=1 timed out' },
          ]),
        ),
      ),
    );
    const health = await controls[0]!.health('binance', 'active');
    expect(health.window).toEqual({ ms: 300_000, ok: 120, failed: 80, byCause: { connection: 40, timeout: 40 } });
    // Each batch ends with two failures after successes: the streak is the batch's tail.
    expect(health.failureStreak).toBe(2);
    expect(health.successStreak).toBe(0);
    expect(health.lastError).toEqual({ cause: 'timeout', atMs: clock.now(), message: 'GET https://api.example.com/v1/k timed out' });
    expect(health.lastSuccessAtMs).toBe(clock.now());
    expect(health.state).toBe('degraded');
    expect(health.reason).toBe('80 of 200 units failed in the last 5m (connection 40, timeout 40)');
  });

  it('reads failing after failures in a row, healthy once the venue answers again, and forgets buckets that left the window', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 12, 0, 0));
    const [a, b] = fleet(clock) as [FleetVenueControl, FleetVenueControl];
    expect((await a.health('binance', 'active')).state).toBe('idle');
    for (let i = 0; i < 20; i++) await a.reportOutcome('binance', { ok: true, latencyMs: 10 });
    expect((await a.health('binance', 'active')).state).toBe('healthy');

    clock.advance(60_000);
    const refused = { ok: false, latencyMs: 3, cause: 'connection', message: 'binance klines request failed: ECONNREFUSED' } as const;
    for (let i = 0; i < 4; i++) await (i % 2 ? a : b).reportOutcome('binance', refused);
    expect((await a.health('binance', 'active')).state).toBe('degraded');
    await b.reportOutcomes('binance', [refused]);
    const failing = await a.health('binance', 'active');
    expect(failing).toMatchObject({
      state: 'failing',
      failureStreak: 5,
      lastError: { cause: 'connection', atMs: clock.now(), message: 'binance klines request failed: ECONNREFUSED' },
      window: { ok: 20, failed: 5, byCause: { connection: 5 } },
    });
    expect(failing.reason).toBe('the last 5 units failed, none succeeded since (last: connection)');
    // The connector's status and a freeze outrank what the units do.
    expect((await a.health('binance', 'paused')).state).toBe('paused');
    await a.freeze('binance', clock.now() + 10_000, 'manual');
    expect((await a.health('binance', 'active')).state).toBe('frozen');
    clock.advance(10_001);

    // Back: successes break the streak; with 5 of 34 failed the window still reads degraded, until
    // the 10th success in a row outweighs it.
    clock.advance(30_000);
    for (let i = 0; i < 9; i++) await b.reportOutcome('binance', { ok: true, latencyMs: 10 });
    expect(await a.health('binance', 'active')).toMatchObject({ state: 'degraded', failureStreak: 0, successStreak: 9 });
    await a.reportOutcome('binance', { ok: true, latencyMs: 10 });
    const recovered = await a.health('binance', 'active');
    expect(recovered).toMatchObject({ state: 'healthy', successStreak: 10, window: { ok: 30, failed: 5 } });
    expect(recovered.reason).toBe('the last 10 units succeeded (5 failed earlier in the last 5m)');

    // Five minutes on, every bucket left the window; a slot written again starts over.
    clock.advance(300_000);
    const idle = await a.health('binance', 'active');
    expect(idle).toMatchObject({ state: 'idle', window: { ok: 0, failed: 0 }, lastError: { cause: 'connection' } });
    await a.reportOutcome('binance', { ok: true, latencyMs: 10 });
    expect((await b.health('binance', 'active')).window).toEqual({ ms: 300_000, ok: 1, failed: 0, byCause: {} });
  });
});
