import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
/** The connector's budget window (`--period 10s`). */
const PERIOD_MS = 10_000;

/** `tickfleet connectors pause binance` mid-run stops requests to Binance at once; resume restarts them. */
describe('fleet: pausing a connector', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 100 } } });
  });
  afterAll(() => fleet.stop());

  it('stops granting binance requests at once: none after the window its last lease was granted in, and resume restarts them', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', `${PERIOD_MS / 1000}s`, '--max-inflight', '3');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    await fleet.backfill('binance', 'BTC/USDT', '1m', to - 200 * DAY, to);
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500' });
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    await fleet.ready(scheduler, 'scheduler started');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= 10, 'binance traffic', { timeoutMs: 90_000 });

    const paused = await fleet.cli(['connectors', 'pause', 'binance', '--json']);
    expect(paused.code).toBe(0);
    // The pause is in the store once the command returns, and every acquire of budget asks the
    // store, which refuses a paused connector: only weight granted before the pause may still
    // reach the venue (requests in flight, and the rest of the worker's lease, which lapses at its
    // 10 s window's end), however long the machine takes. Once that window has ended, nothing more
    // arrives: watched for 4 s.
    const pausedAt = Date.now();
    await new Promise((r) => setTimeout(r, PERIOD_MS - (pausedAt % PERIOD_MS) + 1000));
    const afterWindow = fleet.mock.stats().venues.binance.requests;
    await new Promise((r) => setTimeout(r, 4000));
    const settled = fleet.mock.stats().venues.binance.requests;
    expect(settled).toBe(afterWindow);

    await fleet.ok('connectors', 'resume', 'binance');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= settled + 5, 'binance resumes after resume', { timeoutMs: 90_000 });

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 300_000);
});
