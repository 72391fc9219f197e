import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '../src/testing/index.js';

const LIMIT = 120;
const WINDOW_MS = 10_000;
const DAY = 86_400_000;

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
    await fleet.ok('connectors', 'upsert', 'binance', '--base-url', fleet.mock.baseUrl('binance'), '--limit', String(LIMIT), '--period', '10s', '--max-inflight', '6');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const from = to - 40 * DAY;
    const symbols = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT'];
    const backfillIds: string[] = [];
    for (const s of symbols) {
      const out = await fleet.ok('backfill', 'binance', s, '--timeframe', '1m', '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString(), '--json');
      backfillIds.push((JSON.parse(out) as { id: string }).id);
    }
    fleet.mock.reset();
    const workers = [0, 1, 2].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));

    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          const all = await Promise.all(backfillIds.map((id) => store.backfills.get(id)));
          return all.every((b) => b?.status === 'done');
        }),
      'all backfills done',
      { timeoutMs: 120_000, intervalMs: 500 },
    );

    const stats = fleet.mock.stats().venues.binance;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    expect(stats.responses418).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
    // Every window strictly between the first and the last (demand exceeded supply throughout)
    // received at least 85% of the venue's allowance.
    const windows = stats.windows.filter((w) => w.weight > 0);
    const middle = windows.slice(1, -1);
    expect(middle.length).toBeGreaterThanOrEqual(2);
    for (const w of middle) expect({ startMs: w.startMs, weight: w.weight, atLeast: w.weight >= 0.85 * LIMIT }).toEqual({ startMs: w.startMs, weight: w.weight, atLeast: true });

    for (const s of symbols) {
      const expected = expectedCandles('binance', s, '1m', from, to, DEFAULT_SEED).map((c) => c.openTime);
      const stored = await fleet.storedOpenTimes('binance', s, '1m');
      expect(stored.length).toBe(expected.length);
      expect(stored).toEqual(expected);
    }

    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 180_000);
});
