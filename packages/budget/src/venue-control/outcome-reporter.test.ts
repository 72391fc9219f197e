import { Redis } from 'ioredis';
import { ManualClock, startRedis, waitFor, type TestRedis } from '@tickfleet/testkit';
import { DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';
import { FleetVenueControl, MAX_OUTCOME_BATCH, type ControlStep } from './fleet-venue-control.js';
import { OutcomeReporter } from './outcome-reporter.js';

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  await client.quit();
  await redis.stop();
});

const LIMITS: AimdLimits = { ...DEFAULT_AIMD_LIMITS, min: 1, max: 16, increaseAfterMs: 1000, minSamples: 20, maxFailureRatio: 0.2 };

/** Script calls Redis has served so far (ground truth for how many reports went out). */
async function scriptCalls(): Promise<number> {
  const stats = await client.info('commandstats');
  return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
}

function setup(intervalMs: number) {
  const prefix = redis.namespace();
  const clock = new ManualClock();
  const control = new FleetVenueControl(client, { prefix, clock });
  control.configure('binance', LIMITS);
  const steps: ControlStep[] = [];
  const errors: unknown[] = [];
  const reporter = new OutcomeReporter({ control, venue: 'binance', intervalMs, onStep: (s) => void steps.push(s), onError: (e) => void errors.push(e) });
  return { control, clock, reporter, steps, errors };
}

describe('OutcomeReporter', () => {
  it('sends the successes of an interval as one report that counts every one of them', async () => {
    const { control, reporter, steps, errors } = setup(60_000);
    const before = await scriptCalls();
    for (let i = 0; i < 12; i++) reporter.record({ ok: true, latencyMs: 10 + i });
    await reporter.flush();
    expect(await scriptCalls()).toBe(before + 1);
    expect(steps).toHaveLength(1);
    expect(errors).toEqual([]);
    expect((await control.snapshot('binance')).windowOutcomes).toBe(12);
  });

  it('reports held successes by itself once the interval has passed', async () => {
    const { control, reporter, steps } = setup(20);
    for (let i = 0; i < 5; i++) reporter.record({ ok: true, latencyMs: 5 });
    await waitFor(async () => (await control.snapshot('binance')).windowOutcomes === 5, 'the held outcomes reported by the timer', { timeoutMs: 60_000 });
    expect(steps).toHaveLength(1);
  });

  it('sends a failure at once, with the successes held before it, and AIMD decides on the whole batch', async () => {
    const { control, reporter, steps } = setup(60_000);
    for (let i = 0; i < 15; i++) reporter.record({ ok: true, latencyMs: 5 });
    expect(steps).toHaveLength(0);
    // 5 failures of 20 outcomes: a ratio of 0.25 is over 0.2, so the venue steps down once.
    for (let i = 0; i < 5; i++) reporter.record({ ok: false, latencyMs: 5 });
    await reporter.flush();
    expect(steps.map((s) => s.change)).toContain('decrease');
    expect(await control.concurrency('binance')).toBe(15);
  });

  it('splits more outcomes than one report may carry, in order, losing none', async () => {
    const { control, reporter } = setup(60_000);
    const before = await scriptCalls();
    for (let i = 0; i < MAX_OUTCOME_BATCH * 2 + 3; i++) reporter.record({ ok: true, latencyMs: 1 });
    await reporter.flush();
    expect(await scriptCalls()).toBe(before + 3);
    expect((await control.snapshot('binance')).windowOutcomes).toBe(MAX_OUTCOME_BATCH * 2 + 3);
  });

  it('sends request latencies with the outcomes, and alone while a unit runs, losing none', async () => {
    const { control, reporter } = setup(60_000);
    const before = await scriptCalls();
    // A long unit's requests: reported without any unit outcome (two full batches and a rest).
    for (let i = 0; i < MAX_OUTCOME_BATCH * 2 + 7; i++) reporter.request(5);
    // Units that carry their one request's latency, next to requests of other units.
    for (let i = 0; i < 3; i++) reporter.record({ ok: true, latencyMs: 5 });
    await reporter.flush();
    expect(await scriptCalls()).toBe(before + 3);
    expect(await control.snapshot('binance')).toMatchObject({ windowOutcomes: 3, windowRequests: MAX_OUTCOME_BATCH * 2 + 10 });
  });

  it('refuses an empty or oversized batch with the bound in the message', async () => {
    const { control } = setup(60_000);
    await expect(control.reportOutcomes('binance', [])).rejects.toThrow(`1 to ${MAX_OUTCOME_BATCH} outcomes`);
  });

  it('hands an undeliverable report to onError and keeps working', async () => {
    const prefix = redis.namespace();
    const broken = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    const control = new FleetVenueControl(broken, { prefix });
    const errors: unknown[] = [];
    const reporter = new OutcomeReporter({ control, venue: 'binance', onStep: () => undefined, onError: (e) => void errors.push(e) });
    reporter.record({ ok: false, latencyMs: 1 });
    await reporter.flush();
    expect(errors).toHaveLength(1);
    broken.disconnect();
  });
});
