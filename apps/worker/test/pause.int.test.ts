import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

/** `tickfleet connectors pause binance` mid-run stops requests to Binance at once; resume restarts them. */
describe('fleet: pausing a connector', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 100 } } });
  });
  afterAll(() => fleet.stop());

  it('stops new binance requests within one scheduler tick plus in-flight completion, and resume restarts them', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '3');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    await fleet.backfill('binance', 'BTC/USDT', '1m', to - 200 * DAY, to);
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500' });
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    await fleet.ready(scheduler, 'scheduler started');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= 10, 'binance traffic', { timeoutMs: 90_000 });

    const paused = await fleet.cli(['connectors', 'pause', 'binance', '--json']);
    expect(paused.code).toBe(0);
    // The pause is in the store once the command returns, and every request spends budget in
    // the store first, which a paused connector refuses: only requests whose budget was already
    // spent (at most one per in-flight unit, cap 3) may still reach the venue, however long the
    // machine takes to get there. Watch for 4 s that nothing more arrives.
    const atPause = fleet.mock.stats().venues.binance.requests;
    await new Promise((r) => setTimeout(r, 4000));
    const settled = fleet.mock.stats().venues.binance.requests;
    expect(settled - atPause).toBeLessThanOrEqual(3);

    await fleet.ok('connectors', 'resume', 'binance');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= settled + 5, 'binance resumes after resume', { timeoutMs: 90_000 });

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 300_000);
});
