import { Redis } from 'ioredis';
import { ManualClock } from '@tickfleet/core';
import { startRedis, type TestRedis } from '@tickfleet/testkit';
import { AimdController } from './aimd-controller.js';
import { DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';
import { FleetVenueControl } from './fleet-venue-control.js';

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

const LIMITS: AimdLimits = { ...DEFAULT_AIMD_LIMITS, min: 1, max: 16, increaseAfterMs: 1000, minSamples: 20 };

/** One FleetVenueControl per Redis client, as N worker processes would have. */
function fleet(clock: ManualClock, limits: AimdLimits = LIMITS): FleetVenueControl[] {
  const prefix = redis.namespace();
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

  it('agrees with the in-process AimdController step by step', async () => {
    const clock = new ManualClock();
    const limits: AimdLimits = { ...LIMITS, max: 10, minSamples: 5, maxP95LatencyMs: 400, increaseAfterMs: 700 };
    const [control] = fleet(clock, limits) as [FleetVenueControl];
    const local = new AimdController(limits, clock);
    let seed = 7;
    const rand = (): number => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 400; i++) {
      clock.advance(Math.floor(rand() * 120));
      const r = rand();
      if (r < 0.02) {
        const until = clock.now() + Math.floor(rand() * 1500);
        const remote = await control.onRateLimited('binance', until);
        expect(remote.concurrency).toBe(local.onRateLimited(until).concurrency);
      } else {
        const outcome = { ok: rand() > (i % 100 < 50 ? 0.05 : 0.4), latencyMs: Math.floor(rand() * (i % 60 < 30 ? 300 : 600)) };
        const remote = await control.reportOutcome('binance', outcome);
        const mine = local.reportOutcome(outcome);
        expect(remote).toEqual(mine);
      }
    }
  });
});
