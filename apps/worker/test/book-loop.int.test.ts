import { bookLoopKey, jobId, type PollErrorRecord, type PollStatsRecord } from '@tickfleet/core';
import { marketTokenIds, polymarketMarkets, startMockVenue, type BookRequestRecord, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { createVenueAdapter } from '@tickfleet/venues';
import { ActiveSets } from '../src/active-set.js';
import { FleetWorker } from '../src/fleet-worker.js';
import { UnitExecutor } from '../src/unit-executor.js';
import { WorkerMetrics } from '../src/worker-metrics.js';

const STATE_WAIT = { timeoutMs: 90_000, intervalMs: 50 };
const logger = createLogger({ role: 'test', level: 'silent' });
const SEED = 4242;
const MARKETS = 30;
const CADENCE_MS = 1000;
const SHARES = 4;
/** Two tokens whose books never change. */
const IDLE = marketTokenIds(polymarketMarkets(SEED, MARKETS).find((m) => !m.closed)!);

let redis: TestRedis;
let dir: TempDir;
let store: StateStore;
let sink: SqliteSink;
let pipeline: Pipeline;
let mock: MockVenue;
let connection: RedisClient;
let prefix: string;
const workers: FleetWorker[] = [];

/** Per token, the cadence windows (floor(time / cadence)) in which the emulation answered a book request for it. */
function windowsByToken(log: readonly BookRequestRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of log) {
    for (const t of r.tokens) {
      let list = out.get(t);
      if (!list) out.set(t, (list = []));
      list.push(Math.floor(r.atMs / CADENCE_MS));
    }
  }
  return out;
}

/**
 * Tokens polled twice within one cycle, by the emulation's clock: the loop begins its passes at least
 * a cadence apart and asks for a worker's instruments in the same order each pass, so polls of one
 * token closer than half a cadence (the other half is slack for request latency on a busy machine)
 * would be two in one cycle.
 */
function doublePolls(log: readonly BookRequestRecord[]): string[] {
  const times = new Map<string, number[]>();
  for (const r of log) for (const t of r.tokens) times.set(t, [...(times.get(t) ?? []), r.atMs]);
  return [...times].filter(([, ts]) => ts.some((x, i) => i > 0 && x - ts[i - 1]! < CADENCE_MS / 2)).map(([t]) => t);
}

async function stored<T>(channel: 'book' | 'poll_stats' | 'poll_errors'): Promise<T[]> {
  await pipeline.flush();
  const out: T[] = [];
  for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'polymarket', channel })) out.push(envelope.payload as T);
  return out;
}

function startWorker(workerId: string): Promise<FleetWorker> {
  const w = new FleetWorker({
    redisUrl: redis.url,
    store,
    pipeline,
    logger,
    registry: createRegistry('worker'),
    prefix,
    workerId,
    venues: ['polymarket'],
    pollStatsMs: 3_600_000,
    bookLoopLeaseTtlMs: 1500,
  });
  workers.push(w);
  return w.start().then(() => w);
}

beforeAll(async () => {
  redis = await startRedis();
  prefix = redis.namespace();
  dir = tempDir('book-loop-');
  store = await openStore(dir.sqliteUrl('state.db'));
  sink = new SqliteSink(dir.file('data.db'));
  pipeline = new Pipeline({ sink, logger });
  mock = await startMockVenue({ scenario: { seed: SEED, venues: { polymarket: { markets: MARKETS, idleBooks: IDLE } } } });
  connection = createRedisConnection(redis.url);
  await store.connectors.upsert({
    venue: 'polymarket',
    baseUrl: mock.baseUrl('polymarket'),
    rateLimit: { limit: 1500, periodMs: 10_000 },
    bookLoop: { cadenceMs: CADENCE_MS, shares: SHARES },
  });
  await store.jobs.upsert({ venue: 'polymarket', type: 'discovery', symbol: 'markets' });
  // the active set, as the discovery unit makes it
  const executor = new UnitExecutor({
    store,
    pipeline,
    clock: { now: () => Date.now(), monotonic: () => performance.now() },
    metrics: new WorkerMetrics(createRegistry('worker')),
    activeSets: new ActiveSets(connection, prefix),
  });
  await executor.run({
    unit: { kind: 'discovery', venue: 'polymarket', jobId: jobId({ venue: 'polymarket', type: 'discovery', symbol: 'markets' }), enqueuedAt: Date.now() },
    adapter: createVenueAdapter('polymarket', { baseUrl: mock.baseUrl('polymarket') }),
    signal: new AbortController().signal,
    heartbeat: async () => undefined,
    logger,
  });
}, 60_000);

afterAll(async () => {
  for (const w of workers) await w.stop(2000).catch(() => undefined);
  connection?.disconnect();
  await pipeline?.close();
  await sink?.close();
  await store?.close();
  await mock?.stop();
  await redis?.stop();
  dir?.remove();
});

describe('book poll loop (two workers in process, the emulation over HTTP, real Redis and SQLite)', () => {
  const open = polymarketMarkets(SEED, MARKETS).filter((m) => !m.closed);
  const tokens = open.flatMap((m) => marketTokenIds(m)).sort();

  it('polls every active instrument once per cycle in POST /books batches, split between the workers, and moves a stopped worker’s shares', async () => {
    const [a, b] = [await startWorker('loop-a'), await startWorker('loop-b')];
    await a.refreshConnectors();
    // every token polled at least 3 times
    const polledAtLeast = (n: number, since = 0) => {
      const w = windowsByToken(mock.polymarketBookRequests().slice(since));
      return tokens.every((t) => (w.get(t)?.length ?? 0) >= n);
    };
    await waitFor(() => polledAtLeast(3), 'every token polled 3 times', STATE_WAIT);
    const log = mock.polymarketBookRequests();
    expect(log.every((r) => r.path === '/books' && r.tokens.length <= 500)).toBe(true);
    expect(doublePolls(log)).toEqual([]);
    // no token outside the active set
    for (const r of log) expect(r.tokens.every((t) => tokens.includes(t))).toBe(true);
    // the shares are split, each held by one worker
    const live = await connection.hgetall(bookLoopKey(prefix, 'polymarket', 'live'));
    await a.flushPollStats();
    await b.flushPollStats();
    const reports = Object.values(await connection.hgetall(bookLoopKey(prefix, 'polymarket', 'live'))).map(
      (v) => JSON.parse(v) as { workerId: string; shares: number[]; p95AgeMs: number | null },
    );
    expect(Object.keys(live).length).toBeLessThanOrEqual(2);
    const held = reports.flatMap((r) => r.shares).sort();
    expect(held).toEqual([0, 1, 2, 3]);
    expect(reports.map((r) => r.shares.length).sort()).toEqual([2, 2]);
    expect(mock.stats().venues.polymarket.overLimitRequests).toBe(0);

    // b stops (its shares released): a polls every token from then on, still never twice in a window
    const before = mock.polymarketBookRequests().length;
    await b.stop(5000);
    await waitFor(() => polledAtLeast(3, before), 'every token polled 3 times after the stop', STATE_WAIT);
    expect(doublePolls(mock.polymarketBookRequests())).toEqual([]);
    await a.flushPollStats();
    const after = JSON.parse((await connection.hget(bookLoopKey(prefix, 'polymarket', 'live'), 'loop-a'))!) as { shares: number[] };
    expect(after.shares).toEqual([0, 1, 2, 3]);
  }, 180_000);

  it('stores changed books only, counts unchanged ones, and backs off a resolved market’s tokens alone', async () => {
    const stats = await stored<PollStatsRecord>('poll_stats');
    const loop = stats.filter((s) => s.loop !== undefined);
    expect(loop.length).toBeGreaterThan(0);
    // the idle tokens' books never change: polled every cycle, stored once in all though their share may have moved at b's
    // start and at its stop (the next holder reads the last-stored markers), the rest counted unchanged
    const polls = loop.reduce((n, s) => n + s.ok, 0);
    const unchanged = loop.reduce((n, s) => n + s.loop!.unchanged, 0);
    const idlePolls = IDLE.map((t) => mock.polymarketBookRequests().filter((r) => r.tokens.includes(t)).length);
    expect(Math.min(...idlePolls)).toBeGreaterThanOrEqual(6);
    const books = await stored<{ symbol: string; bids: unknown; asks: unknown; timeMs: number; prevUnchangedPolls?: number }>('book');
    const idleStored = IDLE.map((t) => books.filter((bk) => bk.symbol === t).length);
    expect(idleStored).toEqual([1, 1]);
    expect(unchanged).toBeGreaterThanOrEqual(idlePolls[0]! + idlePolls[1]! - 6);
    // every poll the statistics counted as changed was stored (the loop went on polling since, so the sink may hold more)
    expect(books.length).toBeGreaterThanOrEqual(polls - unchanged);
    // an idle book changes again: the next stored one says how long its predecessor held
    mock.patchScenario({ venues: { polymarket: { idleBooks: [] } } });
    await waitFor(
      async () =>
        (await stored<{ symbol: string; prevUnchangedPolls?: number }>('book')).some((bk) => bk.symbol === IDLE[0] && (bk.prevUnchangedPolls ?? 0) > 0),
      'a stored book carrying its predecessor’s unchanged polls',
      STATE_WAIT,
    );

    // one market resolves: its two tokens come back missing from the batches and back off; the rest go on
    const resolved = open.find((m) => !marketTokenIds(m).some((t) => IDLE.includes(t)))!;
    const gone = marketTokenIds(resolved);
    mock.patchScenario({ venues: { polymarket: { marketEnds: { [resolved.id]: Date.now() } } } });
    const start = mock.polymarketBookRequests().length;
    await waitFor(
      async () => Object.keys(await connection.hgetall(bookLoopKey(prefix, 'polymarket', 'backoff'))).length === 2,
      'the resolved market’s tokens back off',
      STATE_WAIT,
    );
    const backoff = await connection.hgetall(bookLoopKey(prefix, 'polymarket', 'backoff'));
    expect(Object.keys(backoff).sort()).toEqual([...gone].sort());
    await waitFor(
      async () => /no order book for/.test((await store.jobs.get(jobId({ venue: 'polymarket', type: 'book', symbol: gone[0]! })))?.stats.lastError ?? ''),
      'the job shows why its instrument backs off',
      STATE_WAIT,
    );
    const mark = mock.polymarketBookRequests().length;
    const others = tokens.filter((t) => !gone.includes(t));
    await waitFor(
      () => {
        const w = windowsByToken(mock.polymarketBookRequests().slice(mark));
        return others.every((t) => (w.get(t)?.length ?? 0) >= 2);
      },
      'the other tokens polled twice more',
      STATE_WAIT,
    );
    // backing off (5 s at the first failure): not asked for again meanwhile
    const since = windowsByToken(mock.polymarketBookRequests().slice(mark));
    expect(gone.map((t) => since.get(t)?.length ?? 0)).toEqual([0, 0]);
    expect(mock.polymarketBookRequests().length).toBeGreaterThan(start);
    await workers[0]!.flushPollStats();
    const errors = await stored<PollErrorRecord>('poll_errors');
    expect(errors.some((e) => gone.includes(e.symbol) && e.status === 404)).toBe(true);
  }, 180_000);
});
