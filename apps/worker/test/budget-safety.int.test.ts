import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const LIMIT = 120;
const WINDOW_MS = 10_000;
const DAY = 86_400_000;
/** How often the test samples the venue queue's counters. */
const SAMPLE_EVERY_MS = 100;

/** What the venue's queue looked like at one moment while the backfills ran. */
interface QueueSample {
  t: number;
  active: number;
  runnable: number;
  delayed: number;
  concurrency: number;
}

/**
 * A window may receive less than 85% of the allowance only when the fleet was supply-bound in
 * it: every in-flight slot busy (units slower than the budget, e.g. a CPU-starved machine), or no
 * work at all. Units held back (delayed) while slots were free must mean the budget itself was
 * spent, which the venue then sees as >= 85% of its limit; a window that is neither is budget
 * left unused while work waited: a product bug (before backfill chunks ran in parallel, chunks
 * bounced off their job's lock and left 3 of 6 slots idle with 160 chunks delayed).
 * Tolerates 10% of samples catching a slot between one unit's end and the next unit's start.
 * A window in which the sampler itself got under a tenth of its samples is supply-bound too: the
 * sampler runs in this process, which also serves the venue emulation, so a starved sampler means
 * a starved venue that could not have answered the allowance's worth of requests (seen with three
 * jest workers and a busy loop on two cores: 1 sample in a 10 s window that got 68 weight).
 */
function supplyBound(samples: readonly QueueSample[]): boolean {
  const saturated = samples.filter((s) => s.active >= s.concurrency || (s.runnable === 0 && s.delayed === 0));
  return samples.length >= 2 && saturated.length >= 0.9 * samples.length;
}

/**
 * The fleet's central promise, end to end with real processes: three `tickfleet worker`
 * processes backfill against emulated Binance limited to 120 weight per 10 s, and the venue's
 * own accounting shows no window over the limit, no 429, and the allowance well used; the sink
 * then holds exactly the candles the emulation's deterministic data says exist.
 */
describe('fleet: budget safety and completeness with 3 worker processes', () => {
  let fleet: FleetHarness;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { limit: { weight: LIMIT, windowMs: WINDOW_MS } } } });
  });
  afterAll(() => fleet.stop());

  it('never exceeds 120 weight per 10 s window, uses >= 85% of it while demand lasts, and stores every candle once', async () => {
    await fleet.upsertConnector('binance', '--limit', String(LIMIT), '--period', '10s', '--max-inflight', '6');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const from = to - 40 * DAY;
    const symbols = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT'];
    // The three `backfill` CLI processes at once (no worker runs yet: nothing starts before all exist).
    const backfillIds = await Promise.all(
      symbols.map(async (s) => (JSON.parse(await fleet.backfill('binance', s, '1m', from, to, '--json')) as { id: string }).id),
    );
    fleet.mock.reset();
    const workers = [0, 1, 2].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));

    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    const samples: QueueSample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t = Date.now();
        const [c, concurrency] = await Promise.all([queues.counts('binance'), queues.globalConcurrency('binance')]);
        samples.push({ t, active: c.active, runnable: c.waiting + c.prioritized, delayed: c.delayed, concurrency: concurrency ?? 6 });
        await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
      }
    })();
    await Promise.all(backfillIds.map((id) => fleet.backfillDone(id, `backfill ${id} done`, { timeoutMs: 240_000 })));
    sampling = false;
    await sampler;
    await queues.close();
    redis.disconnect();

    const stats = fleet.mock.stats().venues.binance;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    expect(stats.responses418).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
    // Every window strictly between the first and the last (the backfills' demand spans them)
    // received at least 85% of the venue's allowance, unless the fleet was supply-bound in it
    // (see supplyBound). Window boundaries are the emulation's.
    const windows = stats.windows.filter((w) => w.weight > 0);
    const middle = windows.slice(1, -1);
    expect(middle.length).toBeGreaterThanOrEqual(2);
    const verdicts = middle.map((w) => {
      const inWindow = samples.filter((s) => s.t >= w.startMs && s.t < w.startMs + WINDOW_MS);
      const starved = inWindow.length < (0.1 * WINDOW_MS) / SAMPLE_EVERY_MS;
      return { startMs: w.startMs, weight: w.weight, samples: inWindow.length, ok: w.weight >= 0.85 * LIMIT || starved || supplyBound(inWindow) };
    });
    for (const v of verdicts) expect(v).toEqual({ ...v, ok: true });

    for (const s of symbols) {
      const expected = expectedCandles('binance', s, '1m', from, to, DEFAULT_SEED).map((c) => c.openTime);
      const stored = await fleet.storedOpenTimes('binance', s, '1m');
      expect(stored.length).toBe(expected.length);
      expect(stored).toEqual(expected);
    }

    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 360_000);
});
