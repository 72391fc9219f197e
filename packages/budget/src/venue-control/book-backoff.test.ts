import { FleetVenueControl, type BookBackoffOptions } from './fleet-venue-control.js';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { startRedis, type TestRedis } from '@tickfleet/testkit';
import { BOOK_BACKOFF_JITTER, jitteredBackoffMs } from './book-backoff.js';

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

/**
 * The delay a failing book instrument waits, as VenueRunner computes it when a book poll fails:
 * the fleet-wide streak's exponential delay (FleetVenueControl.bookBackoffMs, counted in a real
 * Redis) with the instrument's hash share on top (jitteredBackoffMs).
 */
function retryDelay(control: FleetVenueControl, jobId: string, options: BookBackoffOptions): Promise<number> {
  return control.bookBackoffMs('polymarket', jobId, options).then((delayMs) => jitteredBackoffMs(jobId, delayMs));
}

describe('per-instrument book backoff as the worker applies it', () => {
  const options = { baseMs: 1000, maxMs: 16_000 };

  it('is a pure function of the instrument and its failure streak, whichever worker counts it', async () => {
    const prefix = redis.namespace();
    const [w1, w2] = connections.map((c) => new FleetVenueControl(c, { prefix })) as [FleetVenueControl, FleetVenueControl];
    const ids = ['polymarket:1001:-:book', 'polymarket:1002:-:book'];
    const streaks = 7; // past the cap (1 s doubled 4 times is 16 s)
    const first: Record<string, number[]> = {};
    for (const id of ids) {
      first[id] = [];
      // Alternating workers count one fleet-wide streak.
      for (let n = 1; n <= streaks; n++) first[id].push(await retryDelay(n % 2 ? w1 : w2, id, options));
    }
    for (const id of ids) {
      const delays = first[id]!;
      for (let n = 1; n <= streaks; n++) {
        const capped = Math.min(options.maxMs, options.baseMs * 2 ** (n - 1));
        expect(delays[n - 1]).toBe(jitteredBackoffMs(id, capped));
        expect(delays[n - 1]).toBeGreaterThanOrEqual(capped);
        expect(delays[n - 1]).toBeLessThanOrEqual(capped * (1 + BOOK_BACKOFF_JITTER));
      }
    }
    // The instruments come back apart: at every streak length their delays differ.
    for (let n = 0; n < streaks; n++) expect(first[ids[0]!]![n]).not.toBe(first[ids[1]!]![n]);

    // A success ends the streak; the next streak, counted by the other workers this time, repeats the delays exactly.
    for (const id of ids) {
      await w2.resetBookBackoff('polymarket', id);
      const again: number[] = [];
      for (let n = 1; n <= streaks; n++) again.push(await retryDelay(n % 2 ? w2 : w1, id, options));
      expect(again).toEqual(first[id]);
    }
  });
});
