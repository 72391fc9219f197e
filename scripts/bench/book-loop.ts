/**
 * Order books at 1 s for many Polymarket outcomes: the book loop (leased shares, `POST /books`
 * batches) against the same instruments polled as units (one scheduled `book-poll` unit and one
 * `GET /book` per poll), in the same run, each on a fresh fleet (redis-server, the emulation with
 * its documented limits: CLOB `/book` 1500 and `/books` 500 requests per sliding 10 s, temp SQLite
 * store and sink, a scheduler and worker processes from the CLI).
 *
 *   node --import tsx scripts/bench/book-loop.ts [--outcomes 2000] [--window 30] [--workers 1] [--modes loop,units]
 *
 * The connector's budget is the CLOB `/book` limit, 1500 per 10 s; a batch weighs 3 in it (its own
 * limit is a third as large). After discovery and a warm-up (every outcome polled once), a window
 * of `--window` seconds is measured, all from ground truth:
 * - snapshot age: every 100 ms of the window, for every outcome, the time since the emulation last
 *   answered a book request for it (its request log); p50/p95 over all those samples;
 * - books/s: records the sink stored in the window (the loop stores changed books only; the
 *   emulation's books change every second, so about all of them);
 * - requests per book: venue requests / books asked for in the window;
 * - worker CPU per book: the worker processes' CPU time (/proc) / books asked for;
 * - over the limit: the emulation's over-limit (queued or refused) requests and 429s.
 */
import { marketTokenIds, polymarketMarkets, DEFAULT_SEED, type BookRequestRecord } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';
import { positiveIntArg, stringArg } from './fixtures/args.js';
import { procCpuMs } from './fixtures/proc-cpu.js';

const args = process.argv.slice(2);
const OUTCOMES = positiveIntArg(args, 'outcomes', 2000);
const WINDOW_S = positiveIntArg(args, 'window', 30);
const WORKERS = positiveIntArg(args, 'workers', 1);
const MODES = (stringArg(args, 'modes') ?? 'loop,units').split(',') as Array<'loop' | 'units'>;
/** The fewest markets whose open ones have `OUTCOMES` tokens (one in five or so is closed). */
const MARKETS = (() => {
  for (let n = Math.ceil(OUTCOMES / 2); ; n++) if (polymarketMarkets(DEFAULT_SEED, n).filter((m) => !m.closed).length * 2 >= OUTCOMES) return n;
})();

interface Result {
  mode: string;
  outcomes: number;
  p50AgeMs: number;
  p95AgeMs: number;
  booksPerS: number;
  requestsPerBook: number;
  workerCpuMsPerBook: number;
  workerCpuShare: number;
  venueLatencyP50Ms: number;
  venueLatencyP90Ms: number;
  overLimit: number;
  responses429: number;
}

function percentile(sorted: Float64Array, q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Ages of every token's newest answered request, sampled every 100 ms over [fromMs, toMs). */
function snapshotAges(log: readonly BookRequestRecord[], tokens: readonly string[], fromMs: number, toMs: number): Float64Array {
  const last = new Map<string, number>();
  const ages: number[] = [];
  let i = 0;
  for (let t = fromMs; t < toMs; t += 100) {
    for (; i < log.length && log[i]!.atMs <= t; i++) for (const tok of log[i]!.tokens) last.set(tok, log[i]!.atMs);
    for (const tok of tokens) ages.push(t - (last.get(tok) ?? fromMs - 60_000));
  }
  return Float64Array.from(ages).sort();
}

async function run(mode: 'loop' | 'units'): Promise<Result> {
  const fleet = await FleetHarness.start({ venues: { polymarket: { markets: MARKETS } } });
  const procs: FleetProcess[] = [];
  try {
    await fleet.upsertConnector('polymarket', '--limit', '1500', '--period', '10s', '--max-inflight', '8', ...(mode === 'loop' ? ['--book-loop', '1s'] : []));
    await fleet.ok('jobs', 'add', 'polymarket', 'discovery', 'markets');
    procs.push(fleet.spawnScheduler({ TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '1000' }));
    const workers = Array.from({ length: WORKERS }, (_, i) => fleet.spawn(`worker-${i}`, ['worker']));
    procs.push(...workers);
    for (const w of workers) await fleet.ready(w);
    const tokens = polymarketMarkets(DEFAULT_SEED, MARKETS)
      .filter((m) => !m.closed)
      .flatMap(marketTokenIds)
      .slice(0, OUTCOMES);
    // warm-up: every outcome polled once (units: as many as the budget allows in 3 minutes)
    const seen = (): number => new Set(fleet.mock.polymarketBookRequests().flatMap((r) => r.tokens)).size;
    await waitFor(() => seen() >= tokens.length, 'every outcome polled once', { timeoutMs: 180_000, intervalMs: 500 }).catch(() => undefined);
    const stats0 = fleet.mock.stats().venues.polymarket;
    const books0 = await fleet.withSink((s) => s.reader!.countEnvelopes({ venue: 'polymarket', channel: 'book' }));
    const cpu0 = workers.reduce((n, w) => n + procCpuMs(w.child.pid), 0);
    const log0 = fleet.mock.polymarketBookRequests().length;
    const fromMs = Date.now();
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const toMs = Date.now();
    const cpu = workers.reduce((n, w) => n + procCpuMs(w.child.pid), 0) - cpu0;
    const books = (await fleet.withSink((s) => s.reader!.countEnvelopes({ venue: 'polymarket', channel: 'book' }))) - books0;
    const stats = fleet.mock.stats().venues.polymarket;
    const log = fleet.mock.polymarketBookRequests();
    const inWindow = log.slice(log0);
    const asked = inWindow.reduce((n, r) => n + r.tokens.length, 0);
    const ages = snapshotAges(log, tokens, fromMs, toMs);
    return {
      mode,
      outcomes: tokens.length,
      p50AgeMs: Math.round(percentile(ages, 0.5)),
      p95AgeMs: Math.round(percentile(ages, 0.95)),
      booksPerS: Math.round((books / ((toMs - fromMs) / 1000)) * 10) / 10,
      requestsPerBook: Math.round((inWindow.length / Math.max(1, asked)) * 10_000) / 10_000,
      workerCpuMsPerBook: Math.round((cpu / Math.max(1, asked)) * 1000) / 1000,
      workerCpuShare: Math.round((cpu / (toMs - fromMs)) * 100) / 100,
      venueLatencyP50Ms: stats.latency.p50Ms,
      venueLatencyP90Ms: stats.latency.p90Ms,
      overLimit: stats.overLimitRequests - stats0.overLimitRequests,
      responses429: stats.responses429 - stats0.responses429,
    };
  } finally {
    for (const p of procs) await fleet.stopProcess(p).catch(() => undefined);
    await fleet.stop();
  }
}

const results: Result[] = [];
for (const mode of MODES) {
  const r = await run(mode);
  results.push(r);
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
process.stdout.write(
  '\n| mode | outcomes | snapshot age p50 / p95 | books stored/s | requests per book | worker CPU per book | worker CPU (cores) | over limit / 429 |\n',
);
process.stdout.write('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n');
for (const r of results) {
  process.stdout.write(
    `| ${r.mode} | ${r.outcomes} | ${r.p50AgeMs} / ${r.p95AgeMs} ms | ${r.booksPerS} | ${r.requestsPerBook} | ${r.workerCpuMsPerBook} ms | ${r.workerCpuShare} | ${r.overLimit} / ${r.responses429} |\n`,
  );
}
