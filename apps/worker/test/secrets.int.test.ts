import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
/** Keys no other string in the fleet could contain by chance. */
const PLANTED_KEY = 'PlantedPolygonKey7c1e9a44d2';
const PLANTED_FINNHUB_KEY = 'PlantedFinnhubKey3b8f0d61ce';
/** Alpaca's key pair travels in request headers; planted the same way. */
const PLANTED_ALPACA = { ALPACA_API_KEY_ID: 'PKPLANTEDALPACA7C1E9A', ALPACA_API_SECRET_KEY: 'PlantedAlpacaSecret5b3f0e81c4' };
/** FRED keys are 32 lower-case alphanumerics (the emulation refuses any other). */
const PLANTED_FRED_KEY = 'plantedfredkey7c1e9a44d2b8f0a6c3';

/** Every file under `dir`, as text (SQLite pages, WAL, spool segments, logs). */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push({ path, text: readFileSync(path).toString('latin1') });
  }
  return out;
}

/**
 * The Polygon key travels in the query string of every Polygon request, so any error that quotes
 * a URL could carry it into logs, stored errors, BullMQ failure reasons or pages; the Finnhub key
 * and Alpaca's key pair travel in headers. With all of them planted in a worker's environment,
 * Polygon answering 5xx, malformed bodies and a 429 storm, Finnhub (an options job over a
 * universe) answering some 5xx and malformed chains and a 429 past its 4-a-minute limit, and
 * Alpaca collecting day bars, no key may appear anywhere the fleet writes or serves: process output (debug level), /metrics,
 * `status`, the dashboard's API and bull-board's, every Redis key, and every file in the fleet's
 * directory (state and sink SQLite files with their WAL, spool segments).
 */
describe('fleet: a venue API key never leaves the request that needs it', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    // Every Polygon answer a 5xx at first; the test then walks it through malformed bodies and a 429 storm.
    fleet = await FleetHarness.start({
      // Polygon's own limit far above what the test sends: its only 429s are the storm's. (At the
      // emulation's default 5 per minute, the retries of a slow run's malformed phase spent the
      // window and the venue's 429s, which carry no Retry-After, escalated the connector's freeze
      // 2 s -> 128 s past the test's wait.)
      venues: { polygon: { errorRate: 1, limit: { requests: 10_000 } }, finnhub: { limit: { requests: 4 }, errorRate: 0.3, malformedRate: 0.3 } },
    });
  });
  afterAll(() => fleet.stop());

  it('is nowhere in logs, metrics, status, dashboard, Redis or the store and sink files', async () => {
    const env = {
      POLYGON_API_KEY: PLANTED_KEY,
      FINNHUB_API_KEY: PLANTED_FINNHUB_KEY,
      FRED_API_KEY: PLANTED_FRED_KEY,
      ...PLANTED_ALPACA,
      LOG_LEVEL: 'debug',
      TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS: '1000',
    };
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    // FRED's key travels in the query string too: one series collected, one FRED refuses (400, a
    // stored failure). Set up in the store directly: three more CLI processes would lengthen the test.
    // First, alone: it creates the state store the CLI processes below then open side by side.
    await fleet.withStore(async (s) => {
      await s.connectors.upsert({ venue: 'fred', baseUrl: fleet.mock.baseUrl('fred'), rateLimit: { limit: 120, periodMs: 60_000 } });
      await s.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'DGS10', since: to - 5 * DAY });
      await s.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'NOSUCHSERIES' });
    });
    // One chain of CLI commands per venue, the chains side by side (a job needs its connector, and
    // the options job its universe; nothing else orders them).
    const [backfillId] = await Promise.all([
      (async () => {
        // Polygon's 429 has no Retry-After: the connector's freeze applies (2 s here, not the 60 s default).
        await fleet.upsertConnector('polygon', '--limit', '1000', '--period', '10s', '--max-inflight', '2', '--freeze', '2s');
        const [out] = await Promise.all([
          fleet.backfill('polygon', 'AAPL', '1m', to - 3 * DAY, to, '--json'),
          fleet.ok('jobs', 'add', 'polygon', 'ohlcv', 'MSFT', '--timeframe', '1m', '--since', new Date(to).toISOString()),
        ]);
        return (JSON.parse(out) as { id: string }).id;
      })(),
      (async () => {
        await fleet.upsertConnector('finnhub', '--limit', '1000', '--period', '60s', '--freeze', '2s');
        await fleet.ok('universes', 'set', 'finnhub', 'megacaps', 'AAPL', 'MSFT', 'NVDA');
        await fleet.ok('jobs', 'add', 'finnhub', 'options', '@megacaps', '--per-cycle', '2');
      })(),
      (async () => {
        // Alpaca day bars of the last week (per-day units), collected while Polygon goes through its faults.
        await fleet.upsertConnector('alpaca', '--limit', '200', '--period', '60s');
        await fleet.ok('jobs', 'add', 'alpaca', 'ohlcv', 'AAPL', '--timeframe', '1d', '--since', new Date(to - 7 * DAY).toISOString());
      })(),
    ]);

    const worker = fleet.spawn('worker', ['worker'], env);
    const scheduler = fleet.spawn('scheduler', ['scheduler'], env);
    const dashboard = fleet.spawn('dashboard', ['dashboard', '--port', '0'], env);
    await fleet.ready(worker);
    const polygon = () => fleet.mock.stats().venues.polygon;
    await waitFor(() => polygon().responses5xx >= 2, 'polygon 5xx answers', { timeoutMs: 120_000 });
    fleet.mock.patchScenario({ venues: { polygon: { errorRate: 0, malformedRate: 1 } } });
    await waitFor(() => polygon().malformedResponses >= 2, 'malformed polygon bodies', { timeoutMs: 120_000 });
    // A 429 storm: the rate-limit path logs and freezes too. Storms of 3 s, again until one met a
    // request (a loaded machine, or units waiting out a retry, may send none inside the first).
    let stormUntil = 0;
    await waitFor(
      () => {
        if (polygon().stormResponses >= 1) return true;
        if (Date.now() >= stormUntil) {
          stormUntil = Date.now() + 3000;
          fleet.mock.patchScenario({ venues: { polygon: { malformedRate: 0, stormForMs: 3000 } } });
        }
        return false;
      },
      'a polygon 429',
      { timeoutMs: 120_000 },
    );
    // Done, or a failure that names where it stopped (the backfill's counts, the emulation's counters and the worker's last warnings).
    await fleet.backfillDone(backfillId, 'the polygon backfill done through the faults', {
      timeoutMs: 240_000,
      venue: 'polygon',
      detail: () => `polygon ${JSON.stringify(polygon())}`,
    });
    // The key was used: the emulation answers 401 without one.
    // Polygon minutes exist only in sessions (with sparse extended hours): exactly what the emulation serves.
    expect(await fleet.storedOpenTimes('polygon', 'AAPL', '1m')).toEqual(
      expectedCandles('polygon', 'AAPL', '1m', to - 3 * DAY, to, DEFAULT_SEED).map((c) => c.openTime),
    );
    // Finnhub's faults ran alongside Polygon's phases; its key was used too (chains stored).
    const finnhub = () => fleet.mock.stats().venues.finnhub;
    await waitFor(() => finnhub().responses5xx >= 1 && finnhub().malformedResponses >= 1 && finnhub().responses429 >= 1, 'finnhub 5xx, malformed and 429', {
      timeoutMs: 120_000,
    });
    expect(await fleet.withSink((sink) => sink.reader!.countEnvelopes({ venue: 'finnhub', channel: 'options' }))).toBeGreaterThan(0);
    // and Alpaca's keys were used (the emulation answers 401 without them, 403 for a wrong one)
    await waitFor(async () => (await fleet.storedOpenTimes('alpaca', 'AAPL', '1d')).length > 0, 'alpaca day bars stored', {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    // And FRED's (the emulation answers 400 without one): a series stored, an unknown one failed.
    await waitFor(
      () =>
        fleet.withStore(
          async (s) =>
            ((await s.jobs.get('fred:DGS10:-:series'))?.stats.runs ?? 0) >= 1 && ((await s.jobs.get('fred:NOSUCHSERIES:-:series'))?.stats.failures ?? 0) >= 1,
        ),
      'the fred series stored and the unknown one failed',
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(await fleet.withSink((sink) => sink.reader!.countEnvelopes({ venue: 'fred', channel: 'series' }))).toBeGreaterThanOrEqual(3);

    const places: Array<{ where: string; text: string }> = [];
    const healthPort = await waitFor(() => /"healthPort":(\d+)/.exec(worker.output())?.[1], 'the worker health port');
    places.push({ where: 'worker /metrics', text: await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text() });
    const dashboardUrl = await waitFor(() => /dashboard listening on (http:\/\/\S+)/.exec(dashboard.output())?.[1], 'the dashboard address', {
      timeoutMs: 60_000,
    });
    places.push({ where: 'dashboard /api/status', text: await (await fetch(`${dashboardUrl}/api/status`)).text() });
    for (const queue of ['polygon', 'finnhub', 'alpaca', 'fred']) {
      for (const status of ['failed', 'completed', 'delayed', 'waiting']) {
        places.push({
          where: `bull-board ${queue} ${status}`,
          text: await (await fetch(`${dashboardUrl}/queues/api/queues?activeQueue=%7B${queue}%7D&status=${status}&page=1`)).text(),
        });
      }
    }
    const [statusJson, status, backfillStatus] = await Promise.all([
      fleet.ok('status', '--json'),
      fleet.ok('status'),
      fleet.ok('backfill', 'status', backfillId, '--json'),
    ]);
    places.push({ where: 'status --json', text: statusJson }, { where: 'status', text: status }, { where: 'backfill status', text: backfillStatus });

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
    await fleet.stopCleanly(dashboard);
    for (const p of [worker, scheduler, dashboard]) places.push({ where: `${p.name} output`, text: p.output() });

    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    try {
      for (const key of await redis.keys('*')) {
        const type = await redis.type(key);
        const value =
          type === 'string'
            ? await redis.get(key)
            : type === 'hash'
              ? JSON.stringify(await redis.hgetall(key))
              : type === 'list'
                ? JSON.stringify(await redis.lrange(key, 0, -1))
                : type === 'set'
                  ? JSON.stringify(await redis.smembers(key))
                  : type === 'zset'
                    ? JSON.stringify(await redis.zrange(key, 0, -1))
                    : type === 'stream'
                      ? JSON.stringify(await redis.xrange(key, '-', '+'))
                      : '';
        places.push({ where: `redis ${key}`, text: `${key} ${value ?? ''}` });
      }
    } finally {
      redis.disconnect();
    }
    for (const f of filesUnder(fleet.dir.path)) places.push({ where: f.path, text: f.text });

    expect(places.length).toBeGreaterThan(10);
    for (const planted of [PLANTED_KEY, PLANTED_FINNHUB_KEY, PLANTED_FRED_KEY, ...Object.values(PLANTED_ALPACA)])
      expect(places.filter((p) => p.text.includes(planted)).map((p) => p.where)).toEqual([]);
  }, 400_000);
});
