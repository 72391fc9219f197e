import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, workerHealthz, type FleetProcess } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

/** The venue's connector status as the worker's `/healthz` reports it (from its latest connector read). */
async function servedStatus(worker: FleetProcess, venue: string): Promise<string | undefined> {
  const body = await workerHealthz<{ venues?: { venue: string; status: string }[] }>(worker);
  return body.venues?.find((v) => v.venue === venue)?.status;
}

/** `tickfleet connectors pause binance` mid-run stops requests to Binance at once; resume restarts them. */
describe('fleet: pausing a connector', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 100 } } });
  });
  afterAll(() => fleet.stop());

  it('sends nothing once the worker has read the pause, not even the rest of its lease, and resume restarts it', async () => {
    // A 10-minute window: the worker's lease grows while the backfill runs (doubled each time it is
    // spent within its window), so at the pause it holds weight it could send for seconds more.
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10m', '--max-inflight', '3');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    await fleet.backfill('binance', 'BTC/USDT', '1m', to - 1000 * DAY, to);
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500' });
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    await fleet.ready(scheduler, 'scheduler started');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= 10, 'binance traffic', { timeoutMs: 90_000 });
    await new Promise((r) => setTimeout(r, 15_000));

    const paused = await fleet.cli(['connectors', 'pause', 'binance', '--json']);
    expect(paused.code).toBe(0);
    // The store refuses every acquire of a paused connector at once; the worker drops its lease when
    // it next reads its connectors (its /healthz then says paused). After that only requests
    // already granted may land (2 s for those); then nothing more arrives: watched for 4 s.
    await waitFor(async () => (await servedStatus(worker, 'binance')) === 'paused', 'the worker reads the pause', { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 2000));
    const afterRead = fleet.mock.stats().venues.binance.requests;
    await new Promise((r) => setTimeout(r, 4000));
    expect(fleet.mock.stats().venues.binance.requests).toBe(afterRead);

    await fleet.ok('connectors', 'resume', 'binance');
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= afterRead + 5, 'binance resumes after resume', { timeoutMs: 90_000 });

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 300_000);
});
