import { DEFAULT_BOOK_COOLDOWN, systemClock, type Clock } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { startRedis, type TestRedis } from '@tickfleet/testkit';
import { FleetVenueControl } from './fleet-venue-control.js';
import { WorkerHeartbeat } from './worker-heartbeat.js';

/**
 * Two workers on one real redis-server, one of them with a clock 30 s off the host's (an injected
 * clock; the server's clock is Redis TIME, as in production). Each pause one of them starts must
 * last as long for the other. Before the venue control followed the fleet's timeline, the skewed
 * worker wrote its freezes 30 s late or early (a 5 s freeze read as 35 s, or as none) and read the
 * other's 30 s off.
 */

let redis: TestRedis;
const connections: RedisClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  for (let i = 0; i < 2; i++) connections.push(createRedisConnection(redis.url, { blocking: false }));
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await redis.stop();
});

const PAUSE_MS = 5000;
/** What the offset reading and two round trips may add; the skew is 30 s. */
const TOLERANCE_MS = 250;

function skewedClock(skewMs: number): Clock {
  return { now: () => Date.now() + skewMs, monotonic: () => performance.now() };
}

function fleet(skewMs: number): { skewed: FleetVenueControl; exact: FleetVenueControl; prefix: string } {
  const prefix = redis.namespace();
  const skewed = new FleetVenueControl(connections[0]!, { prefix, clock: skewedClock(skewMs), serverClock: 'redis' });
  const exact = new FleetVenueControl(connections[1]!, { prefix, clock: systemClock });
  return { skewed, exact, prefix };
}

/**
 * Runs `start` (which begins a pause of PAUSE_MS) and then each of `remaining` (a worker's view),
 * and checks each pause left is PAUSE_MS less what really passed meanwhile, within the tolerance.
 */
async function expectPauseSeen(start: () => Promise<unknown>, ...remaining: (() => Promise<number>)[]): Promise<void> {
  const before = performance.now();
  await start();
  const left: number[] = [];
  for (const read of remaining) left.push(await read());
  const passed = performance.now() - before;
  for (const l of left) {
    expect(l).toBeGreaterThanOrEqual(PAUSE_MS - passed - TOLERANCE_MS);
    expect(l).toBeLessThanOrEqual(PAUSE_MS + TOLERANCE_MS);
  }
}

describe.each([
  ['ahead', 30_000],
  ['behind', -30_000],
])('venue control with one worker clock 30 s %s', (_label, skewMs) => {
  const clock = skewedClock(skewMs);

  it("a freeze the skewed worker writes lasts its length for the other, and the other's for it", async () => {
    const { skewed, exact } = fleet(skewMs);
    await expectPauseSeen(
      () => skewed.freeze('binance', clock.now() + PAUSE_MS, 'manual'),
      () => exact.frozenForMs('binance'),
    );
    await expectPauseSeen(
      () => exact.freeze('kraken', Date.now() + PAUSE_MS, 'manual'),
      () => skewed.frozenForMs('kraken'),
    );
    // The freeze end it returns is on its own clock.
    expect(Math.abs((await skewed.frozenUntil('kraken'))! - clock.now() - (await exact.frozenForMs('kraken')))).toBeLessThanOrEqual(TOLERANCE_MS);
  });

  it('a 429 freeze (escalation or Retry-After on the skewed clock) lasts its length fleet-wide', async () => {
    const { skewed, exact } = fleet(skewMs);
    const escalation = { baseMs: PAUSE_MS, maxMs: 60_000, cleanMs: PAUSE_MS };
    await expectPauseSeen(
      () => skewed.onRateLimited('binance', 0, '429', escalation),
      () => exact.frozenForMs('binance'),
    );
    await expectPauseSeen(
      () => skewed.onRateLimited('okx', clock.now() + PAUSE_MS, '429'),
      () => exact.frozenForMs('okx'),
    );
    // What it returns to put its own unit back is on its clock.
    const step = await skewed.onRateLimited('bybit', 0, '429', escalation);
    expect(Math.abs(step.frozenUntilMs - clock.now() - PAUSE_MS)).toBeLessThanOrEqual(TOLERANCE_MS);
  });

  it('an order-book cooldown the skewed worker starts lasts its length for both', async () => {
    const { skewed, exact } = fleet(skewMs);
    const settings = { ...DEFAULT_BOOK_COOLDOWN, minPolls: 2, failureRatio: 0.5, windowMs: 60_000, cooldownMs: PAUSE_MS };
    await expectPauseSeen(
      async () => {
        await skewed.reportBookPoll('polymarket', true, settings);
        expect((await skewed.reportBookPoll('polymarket', true, settings)).started).toBe(true);
      },
      () => exact.bookCooldownMs('polymarket'),
      () => skewed.bookCooldownMs('polymarket'),
    );
    expect(Math.abs(skewed.knownBookCooldownMs('polymarket') - (await exact.bookCooldownMs('polymarket')))).toBeLessThanOrEqual(TOLERANCE_MS);
  });

  it('its heartbeats neither prune the others nor outlive them', async () => {
    const { skewed, exact, prefix } = fleet(skewMs);
    const a = new WorkerHeartbeat(connections[0]!, 'skewed', { prefix, timeline: skewed.timeline });
    const b = new WorkerHeartbeat(connections[1]!, 'exact', { prefix, timeline: exact.timeline });
    await b.beat('binance');
    expect((await a.beat('binance')).live).toBe(2);
    expect((await b.beat('binance')).live).toBe(2);
    expect(await a.liveWorkers('binance')).toBe(2);
  });
});

describe('venue control on one host', () => {
  it('takes reading noise for no offset: processes on the host clock agree on a freeze end to the millisecond', async () => {
    const prefix = redis.namespace();
    const [a, b] = connections.map((c) => new FleetVenueControl(c, { prefix, clock: systemClock })) as [FleetVenueControl, FleetVenueControl];
    const until = Date.now() + PAUSE_MS;
    expect(await a.freeze('binance', until, 'manual')).toEqual({ untilMs: until, cause: 'manual' });
    expect(await b.frozenUntil('binance')).toBe(until);
    expect([a.timeline.offsetMs, b.timeline.offsetMs]).toEqual([0, 0]);
  });
});
