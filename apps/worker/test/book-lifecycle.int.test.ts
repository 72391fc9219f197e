import { jobId, type Clock, type Job, type MarketRecord, type PollErrorRecord, type PollStatsRecord } from '@tickfleet/core';
import { startMockVenue, type MockVenue, type MockVenueName } from '@tickfleet/mock-venue';
import { createRedisConnection, type QueuedUnit, type RedisClient, VenueQueues } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { repoRoot, runCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { createVenueAdapter } from '@tickfleet/venues';
import { BOOK_BACKOFF_DEFAULTS, jitteredBackoffMs } from '@tickfleet/budget';
import { ActiveSets } from '../src/active-set.js';
import { FleetWorker } from '../src/fleet-worker.js';
import { UnitExecutor, type UnitOutcome } from '../src/unit-executor.js';
import { WorkerMetrics } from '../src/worker-metrics.js';

/** Generous bounds for waiting on a state: CI shares 2 cores with other suites. */
const STATE_WAIT = { timeoutMs: 60_000, intervalMs: 50 };
const logger = createLogger({ role: 'test', level: 'silent' });

/** The emulated markets: Polymarket 5 (the fifth closed: 4 open markets, 8 tokens), Limitless 6 (5 markets with a book, 6 slugs). */
const VENUES = {
  polymarket: { markets: 5, hidden: '500000', expiring: '500001' },
  limitless: { markets: 6, hidden: '7000', expiring: '7010' },
} as const;

let redis: TestRedis;
let dir: TempDir;
let store: StateStore;
let sink: SqliteSink;
let pipeline: Pipeline;
let mock: MockVenue;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('book-lifecycle-');
  store = await openStore(dir.sqliteUrl('state.db'));
  sink = new SqliteSink(dir.file('data.db'));
  pipeline = new Pipeline({ sink, logger });
  mock = await startMockVenue({
    scenario: { venues: { polymarket: { markets: VENUES.polymarket.markets }, limitless: { markets: VENUES.limitless.markets, limit: { enabled: false } } } },
  });
});
afterAll(async () => {
  await pipeline?.close();
  await sink?.close();
  await store?.close();
  await mock?.stop();
  await redis?.stop();
  dir?.remove();
});

/** Stored records of one channel, payloads only. */
async function stored<T>(venue: string, channel: 'markets' | 'poll_stats' | 'poll_errors'): Promise<T[]> {
  await pipeline.flush();
  const out: T[] = [];
  for await (const { envelope } of sink.reader!.streamEnvelopes({ venue, channel })) out.push(envelope.payload as T);
  return out;
}

/**
 * Discovery and book polls of one venue through the worker's UnitExecutor (the code a unit runs),
 * against the emulation over HTTP, with the active set in a real Redis and the records in SQLite.
 */
describe.each(['polymarket', 'limitless'] as const)('%s instrument lifecycle', (venue) => {
  let connection: RedisClient;
  let activeSets: ActiveSets;
  let executor: UnitExecutor;
  const discoveryId = jobId({ venue, type: 'discovery', symbol: 'markets' });
  /**
   * The executor's clock: real time plus `ahead`. A market's end is set far enough out that the
   * discovery and the poll before it can never overrun it, however loaded the machine; its
   * expiry is then reached by moving this clock past it (the emulation keeps real time, so it
   * still lists the market: the set retires it on its expiry alone, "listed or not").
   */
  let ahead = 0;
  const clock: Clock = { now: () => Date.now() + ahead, monotonic: () => performance.now() };
  const adapter = () => createVenueAdapter(venue, { baseUrl: mock.baseUrl(venue) });
  const run = (kind: 'discovery' | 'book-poll', id: string): Promise<UnitOutcome> =>
    executor.run({
      unit: { kind, venue, jobId: id, enqueuedAt: Date.now() },
      adapter: adapter(),
      signal: new AbortController().signal,
      heartbeat: async () => undefined,
      logger,
    });
  const requests = async () => mock.stats().venues[venue as MockVenueName].requests;
  const bookJobs = async (): Promise<Job[]> => store.jobs.list({ venue, type: 'book' });
  const instrumentsOf = async (marketId: string) => {
    const set = await activeSets.read(venue);
    return Object.values(set!.instruments).filter((i) => i.market.marketId === marketId);
  };

  beforeAll(async () => {
    connection = createRedisConnection(redis.url);
    activeSets = new ActiveSets(connection, redis.namespace());
    executor = new UnitExecutor({ store, pipeline, clock, metrics: new WorkerMetrics(createRegistry('worker')), activeSets });
    await store.connectors.upsert({ venue, baseUrl: mock.baseUrl(venue), rateLimit: { limit: 1000, periodMs: 10_000 } });
    await store.jobs.upsert({ venue, type: 'discovery', symbol: 'markets' });
  });
  afterAll(() => connection.disconnect());

  it('keeps missing markets, keeps the set on a failed discovery, retires an expired market, and stores metadata on change only', async () => {
    const { hidden, expiring } = VENUES[venue];
    // 1. The first discovery lists every order-book instrument: one `listed` record and one enabled job each.
    await run('discovery', discoveryId);
    const first = (await activeSets.read(venue))!;
    const symbols = Object.keys(first.instruments).sort();
    expect(symbols).toHaveLength(venue === 'polymarket' ? 8 : 6);
    expect(
      (await bookJobs())
        .filter((j) => j.enabled)
        .map((j) => j.symbol)
        .sort(),
    ).toEqual(symbols);
    const listed = await stored<MarketRecord>(venue, 'markets');
    expect(listed.map((r) => r.symbol).sort()).toEqual(symbols);
    for (const r of listed) {
      expect(r).toMatchObject({ event: 'listed', version: 1, marketId: expect.any(String), slug: expect.any(String), title: expect.any(String) });
      expect(r.tokenIds.length).toBe(2);
      expect(r.outcomes).toEqual(['Yes', 'No']);
      expect(r.expiresAtMs).toEqual(expect.any(Number));
    }

    // 2. A market missing from the listing stays in the set (sticky until its expiry): no record, job enabled.
    mock.patchScenario({ venues: { [venue]: { hiddenMarkets: [hidden] } } });
    await run('discovery', discoveryId);
    const second = (await activeSets.read(venue))!;
    expect(second.version).toBe(2);
    expect(Object.keys(second.instruments).sort()).toEqual(symbols);
    expect((await instrumentsOf(hidden)).length).toBeGreaterThan(0);
    expect(await stored<MarketRecord>(venue, 'markets')).toHaveLength(symbols.length);

    // 3. A failed discovery (every answer a 5xx) changes nothing: the set in force stays.
    const before5xx = mock.stats().venues[venue].responses5xx;
    mock.patchScenario({ venues: { [venue]: { errorRate: 1 } } });
    await expect(run('discovery', discoveryId)).rejects.toThrow(/HTTP 5\d\d/);
    expect(mock.stats().venues[venue].responses5xx).toBeGreaterThan(before5xx);
    expect(await activeSets.read(venue)).toEqual(second);
    mock.patchScenario({ venues: { [venue]: { errorRate: 0 } } });

    // 4. A market ending soon: its instruments carry the new expiry and are polled until then.
    const endMs = Date.now() + 10 * 60_000;
    mock.patchScenario({ venues: { [venue]: { marketEnds: { [expiring]: endMs } } } });
    await run('discovery', discoveryId);
    const ending = await instrumentsOf(expiring);
    expect(ending.length).toBeGreaterThan(0);
    for (const i of ending) expect(i.market.expiresAtMs).toBe(endMs);
    const endingJob = jobId({ venue, type: 'book', symbol: ending[0]!.symbol });
    let sent = await requests();
    expect(await run('book-poll', endingJob)).toMatchObject({ outcome: 'ok', records: 1 });
    expect(await requests()).toBe(sent + 1);

    // 5. Past its expiry the poller stops at once (no request), and the next discovery retires it.
    ahead = endMs + 50 - Date.now();
    sent = await requests();
    expect(await run('book-poll', endingJob)).toMatchObject({ outcome: 'skipped', detail: expect.stringMatching(/^market expired at /) });
    expect(await requests()).toBe(sent);
    await run('discovery', discoveryId);
    const after = (await activeSets.read(venue))!;
    expect(after.version).toBe(4);
    expect(await instrumentsOf(expiring)).toEqual([]);
    expect((await instrumentsOf(hidden)).length).toBeGreaterThan(0); // still missing from the listing, still sticky
    for (const i of ending) {
      const job = (await store.jobs.get(jobId({ venue, type: 'book', symbol: i.symbol })))!;
      expect(job.enabled).toBe(false);
      expect(job.stats.lastError).toBe(`retired: market ${expiring} expired at ${new Date(endMs).toISOString()}`);
    }
    const retired = (await stored<MarketRecord>(venue, 'markets')).filter((r) => r.event === 'retired');
    expect(retired.map((r) => r.symbol).sort()).toEqual(ending.map((i) => i.symbol).sort());
    for (const r of retired) expect(r).toMatchObject({ version: 4, marketId: expiring, expiresAtMs: endMs, reason: expect.stringContaining('expired') });
    sent = await requests();
    expect(await run('book-poll', endingJob)).toMatchObject({ outcome: 'skipped', detail: 'job disabled' });
    // The set decides, not the job: re-enabled by hand, the retired instrument is still not polled.
    await store.jobs.setEnabled(endingJob, true);
    expect(await run('book-poll', endingJob)).toMatchObject({ outcome: 'skipped', detail: 'not in the active set (version 4)' });
    expect(await requests()).toBe(sent);
    mock.patchScenario({ venues: { [venue]: { hiddenMarkets: [], marketEnds: {} } } });
    ahead = 0;
  }, 120_000);
});

/**
 * Cooldown and poll telemetry through a real FleetWorker (BullMQ units in a real Redis): most of
 * Polymarket's books answer 500, the venue cools down fleet-wide, units taken during the cooldown
 * send nothing, and the stored poll statistics add up to what the emulation answered.
 */
describe('polymarket book cooldown and poll statistics', () => {
  let connection: RedisClient;
  let queues: VenueQueues;
  let worker: FleetWorker;
  const prefix = `cool${Date.now() % 100_000}`;
  const venue = 'polymarket';
  const COOLDOWN_MS = 10_000;
  let books: string[] = [];

  beforeAll(async () => {
    mock.patchScenario({ venues: { [venue]: { hiddenMarkets: [], marketEnds: {}, errorRate: 0 } } });
    await store.connectors.upsert({
      venue,
      baseUrl: mock.baseUrl(venue),
      rateLimit: { limit: 1000, periodMs: 10_000 },
      maxInflight: 4,
      bookCooldown: { failureRatio: 0.5, minPolls: 4, windowMs: 60_000, cooldownMs: COOLDOWN_MS },
    });
    connection = createRedisConnection(redis.url);
    queues = new VenueQueues(connection, { prefix });
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: createRegistry('worker'),
      prefix,
      workerId: 'w1',
      venues: [venue],
      // Flushed by the test, so each interval's records are known.
      pollStatsMs: 3_600_000,
      // Longer than the slow listing below (20 s), so that discovery waits for its page the whole
      // time instead of timing out after the default 10 s and asking again.
      adapterOptions: { [venue]: { timeoutMs: 60_000 } },
      heartbeatMs: 3_600_000,
    });
    await worker.start();
    // The active set of this fleet (its own prefix): one discovery unit.
    await queues.enqueue([{ kind: 'discovery', venue, jobId: jobId({ venue, type: 'discovery', symbol: 'markets' }), enqueuedAt: Date.now(), dueAt: 1 }]);
    const sets = new ActiveSets(connection, prefix);
    const set = await waitFor(() => sets.read(venue), 'the active set', STATE_WAIT);
    books = Object.keys(set.instruments);
    expect(books).toHaveLength(8);
    // The set is published before the discovery unit completes: a completion counted after the
    // test's `settledBefore` would end its wait for the 16 polls one poll early.
    await waitFor(async () => (await counted()).settled >= 1, 'the discovery unit settled', STATE_WAIT);
  });
  afterAll(async () => {
    await worker?.stop(5000);
    await queues?.close();
    connection?.disconnect();
  });

  const round = (dueAt: number): QueuedUnit[] =>
    books.map((symbol) => ({ kind: 'book-poll', venue, jobId: jobId({ venue, type: 'book', symbol }), enqueuedAt: Date.now(), dueAt }));
  const counted = async () => {
    const c = await queues.counts(venue);
    return { ...c, settled: c.completed + c.failed };
  };

  it('cools the venue down when most polls fail, sends nothing while cooling, and stores stats that match the emulation', async () => {
    // The cooldown settings are the connector's, as stored.
    expect((await store.connectors.get(venue))!.bookCooldown).toEqual({ failureRatio: 0.5, minPolls: 4, windowMs: 60_000, cooldownMs: COOLDOWN_MS });
    await worker.flushPollStats(); // start a clean interval: only this test's polls in the next one
    const failing = books.slice(0, 6);
    mock.patchScenario({ venues: { [venue]: { failingBooks: failing } } });
    const start = mock.stats().venues[venue];
    // The queue's finished units so far (the discovery unit among them): the two rounds add 16.
    const settledBefore = (await counted()).settled;

    // Round 1: 6 of 8 polls answer 500 -> a window of >= 4 polls with half failed starts the cooldown.
    // (The bound on error records is exercised by the counts below: sampled + suppressed = failures.)
    await queues.enqueue(round(1));
    const cooldownKey = `${prefix}:venue:{${venue}}:cooldown`;
    await waitFor(async () => Number((await connection.pttl(cooldownKey)) > 0), 'the venue cooldown', STATE_WAIT);
    expect(await connection.pttl(cooldownKey)).toBeLessThanOrEqual(COOLDOWN_MS);
    // Whatever round 1 still held has gone back to the queue, delayed, or finished.
    await waitFor(async () => (await counted()).active === 0, 'no unit running', STATE_WAIT);
    const atCooldown = mock.stats().venues[venue].requests;

    // Round 2, queued during the cooldown: every unit is taken and put back without a request.
    await queues.enqueue(round(2));
    await waitFor(
      async () => {
        const c = await counted();
        return c.waiting + c.prioritized + c.active === 0;
      },
      'round 2 taken and delayed',
      STATE_WAIT,
    );
    const duringCooldown = mock.stats().venues[venue].requests;
    const stillCooling = await connection.pttl(cooldownKey);
    expect(stillCooling).toBeGreaterThan(0); // the reading above was taken inside the cooldown
    expect(duringCooldown).toBe(atCooldown);
    // The venue recovers: round 2 polls every book successfully once the cooldown ends.
    mock.patchScenario({ venues: { [venue]: { failingBooks: [] } } });

    // After the cooldown every unit of both rounds has polled its book once.
    await waitFor(async () => (await counted()).settled >= settledBefore + 16, 'both rounds polled', { timeoutMs: COOLDOWN_MS + 60_000, intervalMs: 100 });
    await worker.flushPollStats();
    const end = mock.stats().venues[venue];

    const bookRequests = end.requests - start.requests;
    const served5xx = end.responses5xx - start.responses5xx;
    const served2xx = end.responses2xx - start.responses2xx;
    // Round 1's polls before the cooldown met the failing books; everything after it succeeded.
    expect(bookRequests).toBe(16);
    expect(served5xx).toBeGreaterThanOrEqual(2);
    expect(served5xx).toBeLessThanOrEqual(6);
    expect(served2xx).toBe(16 - served5xx);
    const stats = (await stored<PollStatsRecord>(venue, 'poll_stats')).filter((s) => s.submitted > 0);
    const sum = (k: keyof PollStatsRecord) => stats.reduce((n, s) => n + (s[k] as number), 0);
    expect({ submitted: sum('submitted'), ok: sum('ok'), failed: sum('failed'), http5xx: sum('http5xx') }).toEqual({
      submitted: bookRequests,
      ok: served2xx,
      failed: served5xx,
      http5xx: served5xx,
    });
    expect({ http4xx: sum('http4xx'), http429: sum('http429'), timeouts: sum('timeouts'), otherErrors: sum('otherErrors') }).toEqual({
      http4xx: 0,
      http429: 0,
      timeouts: 0,
      otherErrors: 0,
    });
    const last = stats[stats.length - 1]!;
    expect(last).toMatchObject({ venue, symbol: venue, workerId: 'w1', activeInstruments: 8, activeVersion: 1, inflightLimit: expect.any(Number) });
    expect(last.p50LatencyMs).toEqual(expect.any(Number));
    expect(last.p95LatencyMs!).toBeGreaterThanOrEqual(last.p50LatencyMs!);

    // Sampled errors: at most 10 per interval, each naming the market and the venue's status.
    const errors = await stored<PollErrorRecord>(venue, 'poll_errors');
    expect(errors.length).toBe(Math.min(10, served5xx));
    expect(sum('errorsSampled') + sum('errorsSuppressed')).toBe(served5xx);
    for (const e of errors) {
      expect(failing).toContain(e.symbol);
      expect(e).toMatchObject({ venue, status: 500, errorType: 'TransientError', marketId: expect.stringMatching(/^5000\d\d$/), slug: expect.any(String) });
      expect(e.message.length).toBeLessThanOrEqual(300);
    }
    const metrics = await worker.metrics.bookCooldowns.get();
    expect(metrics.values.reduce((n, v) => n + v.value, 0)).toBeGreaterThanOrEqual(1);
    console.log(
      `cooldown: ${bookRequests} book requests (${served5xx} x 500), ${stats.length} poll_stats records, ${errors.length} poll_errors kept; no request while cooling`,
    );
  }, 180_000);

  it('does not cool the venue down on 429s (the freeze handles them), while one 500 with the same settings does', async () => {
    const cooldownKey = `${prefix}:venue:{${venue}}:cooldown`;
    await waitFor(async () => (await connection.pttl(cooldownKey)) < 0, 'the earlier cooldown over', { timeoutMs: 60_000, intervalMs: 100 });
    // One counted failure among up to 100 polls of the window would start a cooldown now; the
    // worker applies the settings before the round.
    const settings = { failureRatio: 0.01, minPolls: 1, windowMs: 60_000, cooldownMs: COOLDOWN_MS };
    await store.connectors.upsert({ venue, baseUrl: mock.baseUrl(venue), rateLimit: { limit: 1000, periodMs: 10_000 }, bookCooldown: settings });
    await worker.refreshConnectors();
    const cooldowns = async () => (await worker.metrics.bookCooldowns.get()).values.reduce((n, v) => n + v.value, 0);
    const cooldownsBefore = await cooldowns();
    await worker.flushPollStats();
    const start = mock.stats().venues[venue];

    // Every request is answered 429 (Retry-After at the storm's end) for 2 s: the venue freezes
    // until then and the round's units wait, delayed, then each polls its book once. A loaded
    // machine may send none of a round's requests inside its storm: then another round under
    // another storm, until the emulation counted a refusal.
    let rounds = 0;
    let end = start;
    let refused = 0;
    for (let dueAt = 4; refused === 0 && rounds < 5; dueAt += 100) {
      const settledBefore = (await counted()).settled;
      mock.patchScenario({ venues: { [venue]: { stormForMs: 2000 } } });
      await queues.enqueue(round(dueAt));
      await waitFor(async () => (await counted()).settled >= settledBefore + 8, 'the round polled after the storm', { timeoutMs: 60_000, intervalMs: 100 });
      rounds += 1;
      end = mock.stats().venues[venue];
      refused = end.stormResponses - start.stormResponses;
    }
    await worker.flushPollStats();
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(end.responses429 - start.responses429).toBe(refused);
    expect(end.responses2xx - start.responses2xx).toBe(8 * rounds);
    // The worker counted each 429 as a failed poll (none before this test), and started no cooldown.
    expect((await stored<PollStatsRecord>(venue, 'poll_stats')).reduce((n, r) => n + r.http429, 0)).toBe(refused);
    expect(await cooldowns()).toBe(cooldownsBefore);
    expect(await connection.pttl(cooldownKey)).toBeLessThan(0);

    // The same settings with one book answering 500: that single failure starts a cooldown.
    mock.patchScenario({ venues: { [venue]: { failingBooks: [books[0]!] } } });
    await queues.enqueue([{ kind: 'book-poll', venue, jobId: jobId({ venue, type: 'book', symbol: books[0]! }), enqueuedAt: Date.now(), dueAt: 5 }]);
    // The cooldown's key is set in Redis before the worker reads the reply and counts it: wait for both.
    await waitFor(async () => (await connection.pttl(cooldownKey)) > 0 && (await cooldowns()) > cooldownsBefore, 'a cooldown from one 500', STATE_WAIT);
    expect(await cooldowns()).toBe(cooldownsBefore + 1);
    expect(mock.stats().venues[venue].responses5xx - end.responses5xx).toBe(1);

    mock.patchScenario({ venues: { [venue]: { failingBooks: [] } } });
    await store.connectors.upsert({
      venue,
      baseUrl: mock.baseUrl(venue),
      rateLimit: { limit: 1000, periodMs: 10_000 },
      bookCooldown: { failureRatio: 0.5, minPolls: 4, windowMs: 60_000, cooldownMs: COOLDOWN_MS },
    });
    await worker.refreshConnectors();
  }, 120_000);

  it('polls books while a slow discovery of the same venue is still waiting for its listing', async () => {
    const cooldownKey = `${prefix}:venue:{${venue}}:cooldown`;
    await waitFor(async () => (await connection.pttl(cooldownKey)) < 0, 'the cooldown over', { timeoutMs: 60_000, intervalMs: 100 });
    mock.patchScenario({ venues: { [venue]: { failingBooks: [], listingDelayMs: 20_000 } } });
    const sets = new ActiveSets(connection, prefix);
    const before = { settled: (await counted()).settled, requests: mock.stats().venues[venue].requests, version: (await sets.read(venue))!.version };
    await queues.enqueue([{ kind: 'discovery', venue, jobId: jobId({ venue, type: 'discovery', symbol: 'markets' }), enqueuedAt: Date.now(), dueAt: 3 }]);
    await waitFor(async () => mock.stats().venues[venue].requests > before.requests, 'the listing request', STATE_WAIT);
    await queues.enqueue(round(3));
    await waitFor(async () => (await counted()).settled >= before.settled + 8, 'round 3 polled', STATE_WAIT);
    // Every book of round 3 was fetched while the discovery still waited for its page: the set in force served them.
    expect(mock.stats().venues[venue].requests).toBe(before.requests + 1 + 8);
    expect((await sets.read(venue))!.version).toBe(before.version);
    expect((await counted()).active).toBe(1);
    mock.patchScenario({ venues: { [venue]: { listingDelayMs: 0 } } });
  }, 120_000);

  it('answers tickfleet data count and export for the new streams', async () => {
    await pipeline.flush();
    const cli = (args: string[]) =>
      runCli(args, { env: { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), TICKFLEET_STORE_URL: dir.sqliteUrl('state.db') }, cwd: repoRoot() });
    const count = await cli(['data', 'count', venue, '--channel', 'poll_errors', '--json']);
    expect(count.code).toBe(0);
    expect(JSON.parse(count.stdout)).toMatchObject({ venue, channel: 'poll_errors', count: (await stored<PollErrorRecord>(venue, 'poll_errors')).length });
    const markets = await cli(['data', 'export', venue, '--channel', 'markets', '--format', 'jsonl']);
    expect(markets.code).toBe(0);
    const lines = markets.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { channel: string; payload: MarketRecord });
    expect(lines.map((l) => l.payload)).toEqual(await stored<MarketRecord>(venue, 'markets'));
    expect(lines.filter((l) => l.payload.event === 'retired')).toHaveLength(2);
  }, 60_000);
});

/**
 * A failed book snapshot's backoff through a real FleetWorker whose clock runs 30 s ahead (an
 * injected clock; the fleet's clock is the Redis server's): the job's next run, written to the
 * store for the scheduler, is the backoff from now on the fleet's timeline. When the worker used
 * its own clock, the instrument waited 30 s longer (or, 30 s behind, not at all).
 */
describe('polymarket book backoff from a worker whose clock is off', () => {
  const SKEW_MS = 30_000;
  const venue = 'polymarket';
  const prefix = `skew${Date.now() % 100_000}`;
  let connection: RedisClient;
  let queues: VenueQueues;
  let worker: FleetWorker;

  beforeAll(async () => {
    mock.patchScenario({ venues: { [venue]: { hiddenMarkets: [], marketEnds: {}, errorRate: 0, failingBooks: [], listingDelayMs: 0 } } });
    await store.connectors.upsert({
      venue,
      baseUrl: mock.baseUrl(venue),
      rateLimit: { limit: 1000, periodMs: 10_000 },
      bookCooldown: { failureRatio: 0.5, minPolls: 4, windowMs: 60_000, cooldownMs: 10_000 },
    });
    await store.jobs.upsert({ venue, type: 'discovery', symbol: 'markets' });
    connection = createRedisConnection(redis.url);
    queues = new VenueQueues(connection, { prefix });
    const clock: Clock = { now: () => Date.now() + SKEW_MS, monotonic: () => performance.now() };
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: createRegistry('worker'),
      prefix,
      venues: [venue],
      clock,
      serverClock: 'redis',
    });
    await worker.start();
    await queues.enqueue([{ kind: 'discovery', venue, jobId: jobId({ venue, type: 'discovery', symbol: 'markets' }), enqueuedAt: Date.now(), dueAt: 1 }]);
    await waitFor(() => new ActiveSets(connection, prefix).read(venue), 'the active set', STATE_WAIT);
  });
  afterAll(async () => {
    await worker?.stop(5000);
    await queues?.close();
    connection?.disconnect();
  });

  it('writes the next run at the backoff from now on the fleet timeline, not on its own clock', async () => {
    const symbol = Object.keys((await new ActiveSets(connection, prefix).read(venue))!.instruments)[0]!;
    const id = jobId({ venue, type: 'book', symbol });
    mock.patchScenario({ venues: { [venue]: { failingBooks: [symbol] } } });
    const failuresBefore = (await store.jobs.get(id))!.stats.failures;
    const before = Date.now();
    await queues.enqueue([{ kind: 'book-poll', venue, jobId: id, enqueuedAt: Date.now(), dueAt: 4 }]);
    const failed = await waitFor(async () => {
      const job = await store.jobs.get(id);
      return job && job.stats.failures > failuresBefore ? job : null;
    }, 'the failed snapshot recorded');
    const after = Date.now();
    mock.patchScenario({ venues: { [venue]: { failingBooks: [] } } });
    // The first failure of this fleet's streak: the base delay with the instrument's jitter.
    const delayMs = jitteredBackoffMs(id, BOOK_BACKOFF_DEFAULTS.baseMs);
    expect(failed.nextRunAt).toBeGreaterThanOrEqual(before + delayMs - 150);
    expect(failed.nextRunAt).toBeLessThanOrEqual(after + delayMs + 150);
  }, 120_000);
});
