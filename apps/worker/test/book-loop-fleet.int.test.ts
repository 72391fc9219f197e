import { hostname } from 'node:os';
import { bookAt, DEFAULT_SEED, marketTokenIds, polymarketMarkets, type BookRequestRecord } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { StreamLeases } from '@tickfleet/streams';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import { bookShareOf, parseBookShareName } from '../src/book-loop.js';

const MARKETS = 60;
const CADENCE_MS = 1000;
const SHARES = 4;
const WAIT = { timeoutMs: 120_000, intervalMs: 100 };
/** Tokens of every fourth open market: books that never change, in every share. */
const IDLE = polymarketMarkets(DEFAULT_SEED, MARKETS)
  .filter((m) => !m.closed)
  .filter((_, i) => i % 4 === 0)
  .flatMap(marketTokenIds);

/** What `tickfleet status --json` says of a book loop (the dashboard's BookLoopStatus, the fields checked here). */
interface BookLoopStatus {
  venue: string;
  cadenceMs: number;
  unheld: number[];
  holders: Array<{ workerId: string; shares: number[]; report: { shares: number[]; instruments: number } | null }>;
  p95AgeMs: number | null;
  weightPerS: number;
  requestsPerS: number;
}

/** Per token, the times (emulation clock) at which a book request asked for it. */
function pollTimes(log: readonly BookRequestRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of log) for (const t of r.tokens) out.set(t, [...(out.get(t) ?? []), r.atMs]);
  return out;
}

/**
 * Ground truth of the series the sinks should hold: per token, the times of the answers whose levels
 * differ from the previous answer's (the first answer included), by the emulation's own books; and
 * the answers a worker may have lost (answered, then killed or stopped before storing): those not
 * followed by another answer of the token within 3 cadences (its share moved, or the end).
 */
function bookChanges(log: readonly BookRequestRecord[]): Map<string, { changes: number[]; losable: Set<number> }> {
  const out = new Map<string, { changes: number[]; losable: Set<number> }>();
  for (const [token, times] of pollTimes(log)) {
    const changes: number[] = [];
    const losable = new Set<number>();
    let prev: string | undefined;
    times.forEach((at, i) => {
      const snap = bookAt('polymarket', token, IDLE.includes(token) ? 0 : at, DEFAULT_SEED);
      const levels = JSON.stringify([snap.bids, snap.asks]);
      if (levels !== prev) changes.push(at);
      prev = levels;
      if (i === times.length - 1 || times[i + 1]! - at > 3 * CADENCE_MS) losable.add(at);
    });
    out.set(token, { changes, losable });
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

/**
 * The book loop end to end: a scheduler and two worker processes from the CLI, discovery through
 * units, books through the loop, the emulation's request log as ground truth of each instrument's
 * polls. One worker is SIGKILLed mid-cycle: its shares move to the other once their leases lapse
 * (5 s), and no instrument is polled twice in a cycle, before, during or after.
 */
describe('fleet: book poll loop with a worker killed mid-cycle', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { polymarket: { markets: MARKETS, idleBooks: IDLE } } });
  });
  afterAll(() => fleet.stop());

  it('polls every instrument once per cycle in batches, within the limit, and moves a killed worker’s shares', async () => {
    await fleet.upsertConnector('polymarket', '--limit', '1500', '--period', '10s', '--book-loop', '1s', '--book-loop-shares', String(SHARES));
    await fleet.ok('jobs', 'add', 'polymarket', 'discovery', 'markets');
    const scheduler = fleet.spawnScheduler();
    // loop reports (poll statistics) every 2 s, for `status`
    const w1 = fleet.spawn('worker-1', ['worker'], { TICKFLEET_POLL_STATS_MS: '2s' });
    const w2 = fleet.spawn('worker-2', ['worker'], { TICKFLEET_POLL_STATS_MS: '2s' });
    await fleet.ready(w1);
    await fleet.ready(w2);

    const tokens = polymarketMarkets(DEFAULT_SEED, MARKETS)
      .filter((m) => !m.closed)
      .flatMap(marketTokenIds);
    const polled = (n: number, which: readonly string[], since = 0) => {
      const times = pollTimes(fleet.mock.polymarketBookRequests().slice(since));
      return which.every((t) => (times.get(t)?.length ?? 0) >= n);
    };
    await waitFor(() => polled(3, tokens), 'every token polled 3 times', WAIT);

    // who holds which share, as the leases say
    const redis = createRedisConnection(fleet.redis.url);
    const holders = await new StreamLeases(redis, 'test-reader', { prefix: fleet.prefix, group: 'bookloop' }).holders();
    redis.disconnect();
    const sharesOf = (worker: string) => [...holders].filter(([, h]) => h.worker === worker).map(([name]) => parseBookShareName(name)!.share);
    // a worker's id is <hostname>-<pid>
    const idOf = (p: typeof w1) => `${hostname()}-${p.child.pid}`;
    expect([...sharesOf(idOf(w1)), ...sharesOf(idOf(w2))].sort()).toEqual([0, 1, 2, 3]);
    const killedShares = sharesOf(idOf(w1));
    expect(killedShares.length).toBeGreaterThan(0);
    const moved = tokens.filter((t) => killedShares.includes(bookShareOf(t, SHARES)));

    // SIGKILL w1 just after one of its cycles began (a request for one of its tokens in the current second)
    await waitFor(
      () => {
        const last = fleet.mock.polymarketBookRequests().at(-1);
        return last !== undefined && moved.includes(last.tokens[0]!) && Date.now() - last.atMs < 200;
      },
      'w1 in the middle of a cycle',
      WAIT,
    );
    const killedAt = fleet.mock.polymarketBookRequests().length;
    await fleet.stopProcess(w1, 'SIGKILL');
    await waitFor(() => polled(3, moved, killedAt), 'the killed worker’s tokens polled 3 times by the other', WAIT);

    const log = fleet.mock.polymarketBookRequests();
    // every poll a batch (no unit polled a book), within the documented maximum; never twice in one cycle
    expect(log.every((r) => r.path === '/books' && r.tokens.length <= 500)).toBe(true);
    expect(doublePolls(log)).toEqual([]);
    const stats = fleet.mock.stats().venues.polymarket;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    // how long the killed worker's tokens went unpolled: the lease TTL (5 s) and a cycle, reported, not asserted
    const lastBefore = Math.max(
      ...log
        .slice(0, killedAt)
        .filter((r) => r.tokens.some((t) => moved.includes(t)))
        .map((r) => r.atMs),
    );
    const firstAfter = Math.min(
      ...log
        .slice(killedAt)
        .filter((r) => r.tokens.some((t) => moved.includes(t)))
        .map((r) => r.atMs),
    );
    process.stdout.write(`book loop: shares ${killedShares.join(',')} moved after ${firstAfter - lastBefore} ms without a poll\n`);
    expect(Number.isFinite(lastBefore) && Number.isFinite(firstAfter) && firstAfter > lastBefore).toBe(true);

    // `status` shows the survivor holding every share, the achieved cadence and the budget it spends
    const loop = await waitFor(
      async () => {
        const status = JSON.parse(await fleet.ok('status', '--json')) as { bookLoops: BookLoopStatus[] };
        const l = status.bookLoops.find((b) => b.venue === 'polymarket');
        const h = l?.holders[0];
        return l && l.holders.length === 1 && h?.workerId === idOf(w2) && h.shares.length === SHARES && h.report?.shares.length === SHARES ? l : null;
      },
      'status showing the survivor holding every share',
      WAIT,
    );
    expect(loop.unheld).toEqual([]);
    expect(loop.cadenceMs).toBe(CADENCE_MS);
    expect(loop.holders[0]!.report!.instruments).toBe(tokens.length);
    expect(loop.p95AgeMs).toEqual(expect.any(Number));
    expect(loop.weightPerS).toBeGreaterThan(0);
    expect(loop.requestsPerS).toBeGreaterThan(0);
    const table = await fleet.ok('status');
    expect(table).toContain('book loops');
    expect(table).toContain(idOf(w2));

    await fleet.stopCleanly(w2);
    await fleet.stopCleanly(scheduler);

    // the sink holds the series of changes: every stored book a change the emulation answered, none stored again by the
    // worker that took its share over (the idle books once in all), and no change missing but one a worker answered then died
    const storedTimes = new Map<string, number[]>();
    await fleet.withSink(async (sink) => {
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'polymarket', channel: 'book' })) {
        const b = envelope.payload as { symbol: string; timeMs: number };
        storedTimes.set(b.symbol, [...(storedTimes.get(b.symbol) ?? []), b.timeMs]);
      }
    });
    const truth = bookChanges(fleet.mock.polymarketBookRequests());
    // idle books in every share, so in the killed worker's too
    expect(new Set(IDLE.map((t) => bookShareOf(t, SHARES))).size).toBe(SHARES);
    expect(IDLE.map((t) => storedTimes.get(t)?.length ?? 0)).toEqual(IDLE.map(() => 1));
    const restored: string[] = [];
    const lost: string[] = [];
    for (const t of tokens) {
      const { changes, losable } = truth.get(t)!;
      const got = new Set(storedTimes.get(t) ?? []);
      for (const at of got) if (!changes.includes(at)) restored.push(`${t}@${at}`);
      for (const at of changes) if (!got.has(at) && !losable.has(at)) lost.push(`${t}@${at}`);
    }
    expect(restored).toEqual([]);
    expect(lost).toEqual([]);
  }, 240_000);
});
