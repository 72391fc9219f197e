import { createServer } from 'node:net';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, workerHealthz } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

interface Health {
  state: string;
  reason: string;
  failureStreak: number;
  successStreak: number;
  window: { ok: number; failed: number; byCause: Record<string, number> };
  lastError: { cause: string; atMs: number; message: string } | null;
}
interface StatusJson {
  atMs: number;
  venues: Array<{ venue: string; status: string; freeze: unknown; budget: { limit: number } | null; health: Health }>;
}
interface Healthz {
  venues: Array<{
    venue: string;
    status: string;
    cap: number;
    localConcurrency: number;
    inflight: number;
    concurrency: number | null;
    health: Health | null;
    freeze: unknown;
    budget: { used: number; limit: number } | null;
    unread?: string[];
  }>;
  persistence: {
    spool: { segments: number; bytes: number };
    replay: { running: boolean; backlogSegments: number; backlogBytes: number; oldestAgeMs: number | null };
  };
}

/** A TCP port nothing listens on (bound, then closed): every connection to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A venue whose every request is refused is `failing` in `tickfleet status` (table and JSON) and
 * in the worker's /healthz, with the last error's cause (`connection`) and time, while its
 * connector stays `active` and unfrozen; pointed back at a venue that answers, it reads `healthy`.
 */
describe('fleet: the health of an unreachable venue', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start();
  });
  afterAll(() => fleet.stop());

  it('reads failing with cause connection in status and /healthz, and healthy once the venue answers again', async () => {
    const flags = ['--limit', '100000', '--period', '10s', '--max-inflight', '4'];
    await fleet.ok('connectors', 'upsert', 'binance', '--base-url', `http://127.0.0.1:${await closedPort()}`, ...flags);
    // 20 days of 1m candles: about 29 chunk units, each refused and retried with backoff.
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    await fleet.backfill('binance', 'BTC/USDT', '1m', to - 20 * DAY, to);
    const scheduler = fleet.spawnScheduler();
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    await fleet.ready(scheduler, 'scheduler started');
    const healthz = (): Promise<Healthz> => workerHealthz<Healthz>(worker);
    const statusJson = async (): Promise<StatusJson> => JSON.parse(await fleet.ok('status', '--json')) as StatusJson;
    const binanceOf = (s: StatusJson) => s.venues.find((v) => v.venue === 'binance')!;

    const failing = await waitFor(
      async () => {
        const s = await statusJson();
        const v = binanceOf(s);
        return v.health.state === 'failing' ? { status: s, venue: v, readBy: Date.now() } : null;
      },
      'status --json: binance failing',
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    // The connector is active and unfrozen: before, nothing said the venue was failing.
    expect(failing.venue).toMatchObject({ status: 'active', freeze: null });
    const { lastError } = failing.venue.health;
    expect(lastError).toMatchObject({ cause: 'connection', message: expect.stringMatching(/^binance klines request failed: .*ECONNREFUSED/) as unknown });
    // When the worker recorded it (the same machine's clock): before status read it, within the test's run.
    expect(lastError!.atMs).toBeLessThanOrEqual(failing.readBy);
    expect(lastError!.atMs).toBeGreaterThan(failing.status.atMs - 120_000);
    expect(failing.venue.health.window.failed).toBeGreaterThanOrEqual(5);
    expect(failing.venue.health.window.byCause.connection).toBe(failing.venue.health.window.failed);

    // The table: HEALTH and LAST ERROR columns, and a line saying why with the error's time.
    const table = await fleet.ok('status');
    expect(table).toMatch(/^VENUE\s+STATE\s+BUDGET.*\s+HEALTH\s+LAST ERROR$/m);
    expect(table).toMatch(/^binance\s+active\s+.*\s+failing\s+connection \S+ ago$/m);
    expect(table).toMatch(
      /^binance failing: .+; last error connection \S+ ago \(\d{4}-\d\d-\d\dT[\d:.]+Z\): binance klines request failed: .*ECONNREFUSED.*$/m,
    );

    // /healthz of the worker: the connector's status, health with the last error, freeze, AIMD value, budget, and the spool's backlog.
    const fromHealthz = await waitFor(
      async () => {
        // A read that answered in full (on a loaded machine one may miss its deadline and say so in `unread`).
        const v = (await healthz()).venues.find((e) => e.venue === 'binance');
        return v?.health?.state === 'failing' && v.unread === undefined ? v : null;
      },
      '/healthz: binance failing',
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    // The budget's effective limit, as status shows it (the limit times the connector's headroom).
    expect(fromHealthz).toMatchObject({ status: 'active', cap: 4, freeze: null, budget: { limit: failing.venue.budget!.limit } });
    expect(fromHealthz.concurrency).toBeGreaterThanOrEqual(1);
    expect(fromHealthz.health!.lastError).toMatchObject({ cause: 'connection' });
    expect(typeof fromHealthz.health!.lastError!.atMs).toBe('number');
    // The sink is up and no unit stored anything: the spool holds nothing and the replay waits on nothing.
    expect((await healthz()).persistence).toMatchObject({
      spool: { segments: 0, bytes: 0 },
      replay: { running: true, backlogSegments: 0, backlogBytes: 0, oldestAgeMs: null },
    });

    // The venue answers again: units that come back from their backoff succeed, and it reads healthy.
    await fleet.upsertConnector('binance', ...flags);
    const healthy = await waitFor(
      async () => {
        const v = binanceOf(await statusJson());
        return v.health.state === 'healthy' ? v : null;
      },
      'status --json: binance healthy again',
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    // The outage is still in the window and the last error is kept; the successes since outweigh them.
    expect(healthy.health.successStreak).toBeGreaterThanOrEqual(10);
    expect(healthy.health.lastError).toMatchObject({ cause: 'connection' });
    await waitFor(async () => (await healthz()).venues.find((e) => e.venue === 'binance')?.health?.state === 'healthy', '/healthz: binance healthy', {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    expect(await fleet.ok('status')).toMatch(/^binance\s+active\s+.*\s+healthy\s+connection \S+ ago$/m);

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 420_000);
});
