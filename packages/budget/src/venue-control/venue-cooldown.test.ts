import { DEFAULT_BOOK_COOLDOWN } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { ManualClock, startRedis, type TestRedis } from '@tickfleet/testkit';
import { FleetVenueControl } from './fleet-venue-control.js';

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

/** Two workers' venue controls on one fleet (one key prefix), on one manual clock. */
function fleet(): { clock: ManualClock; w1: FleetVenueControl; w2: FleetVenueControl } {
  const prefix = redis.namespace();
  // Start on a window boundary, so the polls of a case share one window.
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  const [w1, w2] = connections.map((c) => new FleetVenueControl(c, { prefix, clock })) as [FleetVenueControl, FleetVenueControl];
  return { clock, w1, w2 };
}

describe('the order-book cooldown (FleetVenueControl)', () => {
  const settings = { ...DEFAULT_BOOK_COOLDOWN, minPolls: 4, failureRatio: 0.5, windowMs: 5000, cooldownMs: 30_000 };

  it('starts fleet-wide once enough polls of one window failed, counted across workers', async () => {
    const { clock, w1, w2 } = fleet();
    expect(await w1.reportBookPoll('polymarket', false, settings)).toEqual({ untilMs: 0, started: false });
    expect(await w2.reportBookPoll('polymarket', true, settings)).toEqual({ untilMs: 0, started: false });
    // Three polls, two failed: under minPolls, nothing yet.
    expect(await w1.reportBookPoll('polymarket', true, settings)).toEqual({ untilMs: 0, started: false });
    // The fourth poll, failed: 3 of 4 failed in one window, counted by two workers.
    clock.advance(100);
    const started = await w2.reportBookPoll('polymarket', true, settings);
    expect(started).toEqual({ untilMs: clock.now() + settings.cooldownMs, started: true });
    expect(await w2.bookCooldownMs('polymarket')).toBe(settings.cooldownMs);
    // The other worker reads it once its copy (kept up to 500 ms) is old; a poll reports it without starting another.
    clock.advance(500);
    expect(await w1.bookCooldownMs('polymarket')).toBe(settings.cooldownMs - 500);
    expect(await w1.reportBookPoll('polymarket', true, settings)).toEqual({ untilMs: started.untilMs, started: false });
    clock.advance(500);
    expect(w1.knownBookCooldownMs('polymarket')).toBe(settings.cooldownMs - 1000);
    // Other venues are untouched.
    expect(await w1.bookCooldownMs('limitless')).toBe(0);
  });

  it('a success never starts one, and each window counts afresh', async () => {
    const { clock, w1 } = fleet();
    for (let i = 0; i < 3; i++) expect((await w1.reportBookPoll('limitless', true, settings)).started).toBe(false);
    // Fourth poll of the window succeeds: 3 of 4 failed, but only a failure can start a cooldown.
    expect(await w1.reportBookPoll('limitless', false, settings)).toEqual({ untilMs: 0, started: false });
    // Next window: its first failures are under minPolls again.
    clock.advance(settings.windowMs);
    for (let i = 0; i < 3; i++) expect((await w1.reportBookPoll('limitless', true, settings)).started).toBe(false);
    expect(await w1.bookCooldownMs('limitless')).toBe(0);
  });
});
