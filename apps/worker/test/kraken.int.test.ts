import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { FleetHarness } from '@tickfleet/testkit/fleet';

/** Kraken's call counter in this test: at most 4, drained from full in 8 s (0.5 a second). */
const LIMIT = 4;
const WINDOW_MS = 8000;
const MINUTE = 60_000;

/**
 * Kraken end to end through the CCXT engine, with real processes: two `tickfleet worker` processes
 * backfill six pairs against emulated Kraken whose call counter is small enough that the fleet's GCRA
 * budget paces them; the emulation's own counter never reaches past its maximum (no refusal), and the
 * sink holds exactly the candles the emulation's data says exist.
 */
describe('fleet: Kraken through the CCXT engine', () => {
  let fleet: FleetHarness;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { kraken: { limit: { requests: LIMIT, windowMs: WINDOW_MS } } } });
  });
  afterAll(() => fleet.stop());

  it('backfills every candle once, paced by the budget, with 0 requests over the counter', async () => {
    await fleet.upsertConnector('kraken', '--policy', 'gcra', '--limit', String(LIMIT), '--period', `${WINDOW_MS / 1000}s`, '--max-inflight', '2');
    const to = Math.floor(Date.now() / MINUTE) * MINUTE - 5 * MINUTE;
    // Kraken keeps the 720 newest entries of an interval: the range stays within them.
    const from = to - 600 * MINUTE;
    const symbols = ['BTC/USD', 'ETH/USD', 'SOL/USD', 'DOGE/USD', 'BTC/EUR', 'ETH/BTC'];
    const ids = await Promise.all(symbols.map(async (s) => (JSON.parse(await fleet.backfill('kraken', s, '1m', from, to, '--json')) as { id: string }).id));
    fleet.mock.reset();
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    const detail = (): string => JSON.stringify(fleet.mock.stats().venues.kraken);
    await Promise.all(ids.map((id) => fleet.backfillDone(id, `backfill ${id} done`, { timeoutMs: 180_000, venue: 'kraken', detail })));

    const stats = fleet.mock.stats().venues.kraken;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
    expect(stats.responses5xx + stats.responses4xx).toBe(0);
    // Six OHLC calls and each worker's market load (Assets, AssetPairs): more than the counter holds at once.
    expect(stats.requests).toBeGreaterThan(LIMIT);
    for (const s of symbols) {
      const expected = expectedCandles('kraken', s, '1m', from, to, DEFAULT_SEED).map((c) => c.openTime);
      const stored = await fleet.storedOpenTimes('kraken', s, '1m');
      expect(stored).toEqual(expected);
    }
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 300_000);
});
