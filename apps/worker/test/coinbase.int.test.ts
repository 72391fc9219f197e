import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { FleetHarness } from '@tickfleet/testkit/fleet';

/** Coinbase's public limit in this test: 5 requests per clock second (the documented one is 10). */
const LIMIT = 5;
const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * Coinbase Exchange end to end through the CCXT engine, with real processes: two `tickfleet worker`
 * processes backfill three products, 300 candles a request, against emulated Coinbase limited to 5
 * requests a second; the emulation's own accounting shows no window over the limit and no 429, and the
 * sink holds exactly the candles the emulation's data says exist (holes included).
 */
describe('fleet: Coinbase through the CCXT engine', () => {
  let fleet: FleetHarness;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;
  const from = to - 2 * DAY;
  const holes = { rate: 0.01, ranges: [{ symbol: 'ETH/USD', fromMs: from + 100 * MINUTE, toMs: from + 500 * MINUTE }] };

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { coinbase: { limit: { requests: LIMIT, windowMs: 1000 }, holes } } });
  });
  afterAll(() => fleet.stop());

  it('backfills every candle once within the limit, 0 requests over it', async () => {
    await fleet.upsertConnector('coinbase', '--limit', String(LIMIT), '--period', '1s', '--max-inflight', '4');
    const symbols = ['BTC/USD', 'ETH/USD', 'SOL/USD'];
    const ids = await Promise.all(symbols.map(async (s) => (JSON.parse(await fleet.backfill('coinbase', s, '1m', from, to, '--json')) as { id: string }).id));
    fleet.mock.reset();
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    const detail = (): string => JSON.stringify(fleet.mock.stats().venues.coinbase);
    await Promise.all(ids.map((id) => fleet.backfillDone(id, `backfill ${id} done`, { timeoutMs: 180_000, venue: 'coinbase', detail })));

    const stats = fleet.mock.stats().venues.coinbase;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    expect(stats.responses4xx + stats.responses5xx).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
    // 2 days of minutes at 300 a request: at least 10 requests per product, more than a second's worth
    expect(stats.requests).toBeGreaterThanOrEqual(30);
    for (const s of symbols) {
      const expected = expectedCandles('coinbase', s, '1m', from, to, DEFAULT_SEED, { holes }).map((c) => c.openTime);
      const stored = await fleet.storedOpenTimes('coinbase', s, '1m');
      expect(stored).toEqual(expected);
    }
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 300_000);
});
