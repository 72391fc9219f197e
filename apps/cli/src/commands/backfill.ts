import { randomUUID } from 'node:crypto';
import { type Command } from 'commander';
import {
  alignDown,
  type Backfill,
  type BackfillChunk,
  chunkRange,
  DEFAULT_MAX_BACKFILL_UNITS,
  MAX_BACKFILL_UNITS_CEILING,
  jobId as makeJobId,
  parseJobId,
  parseOrThrow,
  SymbolName,
  type Timeframe,
  TIMEFRAMES,
  timeframeMs as timeframeMsOf,
  ValidationError,
  VenueName,
} from '@tickfleet/core';
import type { QueuedUnit, VenueQueues } from '@tickfleet/queues';
import { gapsToRanges } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import { createVenueAdapter, hasVenueAdapter, isCandleSource, isSeriesSource, isTradeSource } from '@tickfleet/venues';
import { isoDate, oneOf, positiveInt } from '../args.js';
import { preflightRedis } from '../role-guard.js';
import { assertVenueSymbol } from '../venue-symbols.js';
import { sinkOption, withSink } from './data.js';
import { fleetRedis } from '../fleet-context.js';
import { isoOrDash, jsonOption, printJson, printTable, withDefaultCommandHelp } from '../output.js';
import { ProgressBar } from '../progress-bar.js';
import { withStore } from '../store-context.js';

interface BackfillOptions {
  timeframe?: Timeframe;
  trades?: boolean;
  from?: number;
  to?: number;
  gaps?: string;
  follow?: boolean;
  json?: boolean;
  sink: string;
  maxUnits: number;
}

/** A backfill with the chunks that failed and why (what `status` and `--follow` report). */
type BackfillReport = Backfill & { failedChunks: Array<Pick<BackfillChunk, 'fromMs' | 'toMs' | 'error'>> };

export function registerBackfill(program: Command): void {
  const backfill = program
    .command('backfill')
    .description("collect a past range of candles or economic-series days (or a job's open gaps) as page-sized units below live work; status, list, cancel");

  const start = sinkOption(
    backfill
      // The default subcommand, so `tickfleet backfill <venue> <symbol> …` runs it: were it the
      // group's own action, its options would be the group's, and commander lets a group claim
      // its options anywhere on the line (`backfill status <id> --json` printed the table).
      .command('start', { isDefault: true })
      .description('enqueue a backfill (the default: tickfleet backfill <venue> <symbol> … is tickfleet backfill start <venue> <symbol> …)')
      .argument('[venue]', 'venue, e.g. binance')
      .argument('[symbol]', 'symbol, e.g. BTC/USDT')
      .option('--timeframe <tf>', `candle timeframe (${TIMEFRAMES.join(' ')}); none for an economic series (fred DGS10)`, oneOf('--timeframe', TIMEFRAMES))
      .option('--trades', `trades instead of candles: the venue's trades in the range, in one-minute units (venues answering trades by time)`)
      .option('--from <iso>', 'range start (inclusive), e.g. 2024-01-01', isoDate('--from'))
      .option('--to <iso>', 'range end (exclusive), e.g. 2024-02-01', isoDate('--to'))
      .option(
        '--gaps <jobId>',
        "turn the job's open gaps (not venue holes), and a missing head from its --since to the first stored candle (read from --sink), into units instead of a range",
      )
      .option('--follow', 'wait and show progress until the backfill ends; exits 1 unless it ends done')
      .addOption(jsonOption())
      .option(
        '--max-units <n>',
        `refuse a backfill needing more page-sized units than this (at most ${MAX_BACKFILL_UNITS_CEILING})`,
        positiveInt('--max-units'),
        DEFAULT_MAX_BACKFILL_UNITS,
      ),
  ).action(async (venue: string | undefined, symbol: string | undefined, opts: BackfillOptions, cmd: Command) => {
    if (opts.maxUnits > MAX_BACKFILL_UNITS_CEILING) throw new ValidationError('--max-units', `at most ${MAX_BACKFILL_UNITS_CEILING}`, opts.maxUnits);
    const request = opts.gaps !== undefined ? gapRequest(opts.gaps) : rangeRequest(venue, symbol, opts);
    // The fleet's Redis must be configured and answer before the store is touched: a refused
    // backfill changes nothing.
    await preflightRedis(fleetRedis().redisUrl);
    request.maxUnits = opts.maxUnits;
    const firstStored = request.ranges === 'gaps' ? await firstStoredOpenTime(opts.sink, request) : undefined;
    const created = await withStore(cmd, async (store) => enqueueBackfill(store, request, firstStored));
    if (!opts.follow) {
      if (opts.json) printJson(created);
      else if (created)
        process.stdout.write(`${created.id}: ${created.unitsTotal} units for ${created.jobId} ${isoOrDash(created.fromMs)} .. ${isoOrDash(created.toMs)}\n`);
      else process.stdout.write('nothing to backfill: no open gaps\n');
      return;
    }
    if (!created) {
      if (opts.json) printJson(null);
      else process.stdout.write('nothing to backfill: no open gaps\n');
      return;
    }
    const final = await withStore(cmd, (store) => follow(store, created.id, !opts.json));
    if (opts.json) printJson(final);
    else {
      process.stdout.write(
        `${final.id}: ${final.status}, ${final.unitsDone}/${final.unitsTotal} units${final.unitsFailed ? `, ${final.unitsFailed} failed` : ''}\n`,
      );
      printFailures(final);
    }
    // A script waiting on the backfill must see that it did not complete.
    if (final.status !== 'done') process.exitCode = 1;
  });
  withDefaultCommandHelp(backfill, start, [
    'tickfleet backfill binance BTC/USDT --timeframe 1m --from 2024-01-01 --to 2024-01-08 --follow',
    'tickfleet backfill fred DGS10 --from 2024-01-01 --to 2024-02-01',
    'tickfleet backfill binance BTC/USDT --trades --from 2024-01-01T00:00Z --to 2024-01-01T06:00Z',
    'tickfleet backfill --gaps binance:BTC/USDT:1m:ohlcv',
  ]);

  backfill
    .command('status <id>')
    .description('show a backfill')
    .addOption(jsonOption())
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const found = await withStore(cmd, (store) => report(store, id));
      if (opts.json) printJson(found);
      else {
        printBackfills([found]);
        printFailures(found);
      }
    });

  backfill
    .command('list')
    .description('list backfills')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const all = await withStore(cmd, (store) => store.backfills.list());
      if (opts.json) printJson(all);
      else printBackfills(all);
    });

  backfill
    .command('cancel <id>')
    .description('cancel a backfill: its queued units are removed, running ones finish')
    .addOption(jsonOption())
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const cancelled = await withStore(cmd, async (store) => {
        const bf = await getBackfill(store, id);
        const saved = await store.backfills.setStatus(id, 'cancelled');
        const removed = await withQueues(async (queues) => {
          const queue = queues.queue(parseJobId(bf.jobId).venue);
          // Scan the venue's queued units in pages (collect first: removing shifts the pages);
          // running units of the backfill finish on their own.
          const mine = [];
          for (let start = 0; ; start += 500) {
            const page = await queue.getJobs(['waiting', 'prioritized', 'delayed'], start, start + 499);
            mine.push(...page.filter((job) => job?.data.backfillId === bf.id));
            if (page.length < 500) break;
          }
          for (const job of mine) await job.remove();
          return mine.length;
        });
        return { ...saved, removedUnits: removed };
      });
      if (opts.json) printJson(cancelled);
      else process.stdout.write(`${cancelled.id}: cancelled, ${cancelled.removedUnits} queued units removed\n`);
    });
}

interface BackfillRequest {
  jobId: string;
  venue: string;
  /** Candles of this timeframe; absent: an economic series (whole UTC days), or trades. */
  timeframe?: Timeframe;
  /** Trades by time, {@link TRADES_CHUNK_MS} a unit. */
  trades?: boolean;
  symbol: string;
  ranges: Array<{ fromMs: number; toMs: number }> | 'gaps';
  /** Refuse the backfill when it needs more units than this. @defaultValue DEFAULT_MAX_BACKFILL_UNITS */
  maxUnits?: number;
}

function rangeRequest(venue: string | undefined, symbol: string | undefined, opts: BackfillOptions): BackfillRequest {
  if (venue === undefined) throw new ValidationError('venue', 'a venue argument (tickfleet backfill <venue> <symbol> --timeframe 1m --from … --to …)');
  if (symbol === undefined) throw new ValidationError('symbol', 'a symbol argument, e.g. BTC/USDT');
  const v = parseOrThrow(VenueName, venue, 'venue');
  const s = parseOrThrow(SymbolName, symbol, 'symbol');
  if (opts.trades && opts.timeframe !== undefined) throw new ValidationError('--timeframe', 'no timeframe with --trades', opts.timeframe);
  // A series publisher (FRED) backfills observation dates, without a timeframe.
  const series = opts.timeframe === undefined && !opts.trades && publishesSeries(v);
  assertVenueSymbol(v, s);
  if (!opts.timeframe && !series && !opts.trades) throw new ValidationError('--timeframe', 'a timeframe, e.g. --timeframe 1m');
  if (opts.from === undefined) throw new ValidationError('--from', 'a range start, e.g. --from 2024-01-01');
  if (opts.to === undefined) throw new ValidationError('--to', 'a range end, e.g. --to 2024-01-08');
  if (opts.to <= opts.from) throw new ValidationError('--to', `a time after --from (${new Date(opts.from).toISOString()})`, new Date(opts.to).toISOString());
  // History only: what has not happened yet is live collection's work (`jobs add`), and a unit
  // for a future range could never finish.
  const now = Date.now();
  if (opts.from >= now) throw new ValidationError('--from', `a time in the past (now is ${new Date(now).toISOString()})`, new Date(opts.from).toISOString());
  if (opts.to > now)
    throw new ValidationError(
      '--to',
      `a time not after now (${new Date(now).toISOString()}); live jobs collect what comes later`,
      new Date(opts.to).toISOString(),
    );
  if (opts.trades)
    return { jobId: makeJobId({ venue: v, symbol: s, type: 'trades' }), venue: v, symbol: s, trades: true, ranges: [{ fromMs: opts.from, toMs: opts.to }] };
  if (!opts.timeframe)
    return { jobId: makeJobId({ venue: v, symbol: s, type: 'series' }), venue: v, symbol: s, ranges: [{ fromMs: opts.from, toMs: opts.to }] };
  return {
    jobId: makeJobId({ venue: v, symbol: s, timeframe: opts.timeframe, type: 'ohlcv' }),
    venue: v,
    symbol: s,
    timeframe: opts.timeframe,
    ranges: [{ fromMs: opts.from, toMs: opts.to }],
  };
}

/** Whether `venue`'s adapter publishes economic series (a capability check: the adapter sends nothing). */
function publishesSeries(venue: string): boolean {
  return hasVenueAdapter(venue) && isSeriesSource(createVenueAdapter(venue, { baseUrl: 'http://127.0.0.1' }));
}

/**
 * Trades per backfill unit, by time. A unit is the budget's unit of work and starts over when the
 * budget makes it yield, so it should hold a page or a few: a minute of a busy pair (Binance
 * BTC/USDT: one to a few thousand trades) is one to three pages.
 */
const TRADES_CHUNK_MS = 60_000;

/** The chunks of a trades backfill: {@link TRADES_CHUNK_MS} each, the last one cut at the range's end. */
function tradeChunks(fromMs: number, toMs: number): Array<{ fromMs: number; toMs: number }> {
  const chunks: Array<{ fromMs: number; toMs: number }> = [];
  for (let start = fromMs; start < toMs; start += TRADES_CHUNK_MS) chunks.push({ fromMs: start, toMs: Math.min(start + TRADES_CHUNK_MS, toMs) });
  return chunks;
}

/**
 * Observation days per series backfill unit: one request per series of the job (FRED answers
 * up to 100000 observations in one), a year of days keeping each unit short.
 */
const SERIES_CHUNK_DAYS = 366;

/** The chunks of an economic-series backfill: whole UTC days, {@link SERIES_CHUNK_DAYS} per unit. */
function seriesChunks(fromMs: number, toMs: number): Array<{ fromMs: number; toMs: number }> {
  const chunkMs = SERIES_CHUNK_DAYS * 86_400_000;
  const chunks: Array<{ fromMs: number; toMs: number }> = [];
  for (let start = alignDown(fromMs, '1d'); start < toMs; start += chunkMs) chunks.push({ fromMs: start, toMs: Math.min(start + chunkMs, toMs) });
  return chunks;
}

function gapRequest(id: string): BackfillRequest {
  const parsed = parseJobId(id);
  if (parsed.type !== 'ohlcv' || !parsed.timeframe) throw new ValidationError('--gaps', 'a candle job id such as binance:BTC/USDT:1m:ohlcv', id);
  return { jobId: id, venue: parsed.venue, symbol: parsed.symbol, timeframe: parsed.timeframe, ranges: 'gaps' };
}

/** Records the backfill and enqueues one unit per page-sized chunk; returns null when there is nothing to do. */
async function enqueueBackfill(store: StateStore, req: BackfillRequest, firstStored?: number | null): Promise<Backfill | null> {
  const connector = await store.connectors.get(req.venue);
  if (!connector) throw new ValidationError('venue', `an existing connector (create it with tickfleet connectors upsert ${req.venue} …)`, req.venue);
  if (!hasVenueAdapter(req.venue)) throw new ValidationError('venue', 'a venue with a candle adapter (binance, polygon)', req.venue);
  const adapter = createVenueAdapter(req.venue, { baseUrl: connector.baseUrl });
  let existing = await store.jobs.get(req.jobId);
  if (req.trades && req.ranges !== 'gaps') {
    if (!isTradeSource(adapter)) throw new ValidationError('venue', `a venue with public trades (${req.venue} has none)`, req.venue);
    if (!adapter.tradesByTime)
      throw new ValidationError(
        '--trades',
        `a venue answering trades from a time (${req.venue} serves only its newest trades: jobs add ${req.venue} trades …)`,
        req.venue,
      );
    const chunks = req.ranges.flatMap((r) => tradeChunks(r.fromMs, r.toMs));
    const maxUnits = req.maxUnits ?? DEFAULT_MAX_BACKFILL_UNITS;
    if (chunks.length > maxUnits)
      throw new ValidationError('--from/--to', `a range of at most ${maxUnits} one-minute units (this one needs ${chunks.length}: raise --max-units)`);
    const job = existing ?? (await store.jobs.upsert({ venue: req.venue, type: 'trades', symbol: req.symbol, enabled: false }));
    return recordAndEnqueue(store, req.jobId, req.venue, job.priority, chunks);
  }
  if (req.timeframe === undefined && req.ranges !== 'gaps' && isSeriesSource(adapter)) {
    // Names a bad series id (ValidationError) before anything is stored.
    adapter.seriesOf(req.symbol);
    const chunks = req.ranges.flatMap((r) => seriesChunks(r.fromMs, r.toMs));
    const maxUnits = req.maxUnits ?? DEFAULT_MAX_BACKFILL_UNITS;
    if (chunks.length > maxUnits)
      throw new ValidationError(
        '--from/--to',
        `a range of at most ${maxUnits} units of ${SERIES_CHUNK_DAYS} days (this one needs ${chunks.length}: raise --max-units)`,
      );
    const job = existing ?? (await store.jobs.upsert({ venue: req.venue, type: 'series', symbol: req.symbol, enabled: false }));
    return recordAndEnqueue(store, req.jobId, req.venue, job.priority, chunks);
  }
  if (!isCandleSource(adapter) || req.timeframe === undefined) throw new ValidationError('venue', 'a venue with candles (binance, polygon)', req.venue);
  const timeframe = req.timeframe;
  if (!existing && req.ranges === 'gaps') {
    // A member of a universe job has gaps on its own series but no job: backfill units need one
    // (they read its venue, symbol and timeframe), so a disabled job of that series is created.
    if ((await store.gaps.list({ jobId: req.jobId, open: true })).length === 0)
      throw new ValidationError('--gaps', 'an existing job, or a series with open gaps (see tickfleet jobs list, tickfleet gaps)', req.jobId);
    existing = await store.jobs.upsert({ venue: req.venue, type: 'ohlcv', symbol: req.symbol, timeframe, enabled: false });
  }
  let ranges: Array<{ fromMs: number; toMs: number }>;
  if (req.ranges === 'gaps') {
    const open = (await store.gaps.list({ jobId: req.jobId, open: true })).filter((g) => g.kind === 'missing');
    ranges = gapsToRanges(open);
    const head = missingHead(existing ?? { since: null, cursor: null }, timeframe, firstStored);
    // The ledger only knows holes between stored candles; a head lost before the first one
    // (e.g. units lost with Redis) is owed too.
    if (head)
      ranges = gapsToRanges([...ranges, head].map((r) => ({ jobId: req.jobId, ...r, kind: 'missing' as const, detectedAt: 0, filledAt: null, attempts: 0 })));
    if (ranges.length === 0) return null;
  } else {
    ranges = req.ranges;
  }
  // Counted before the chunks are built and before anything is stored: a mistyped century is
  // refused, not materialised as 50,000 units.
  const maxUnits = req.maxUnits ?? DEFAULT_MAX_BACKFILL_UNITS;
  const pageMs = timeframeMsOf(timeframe) * adapter.maxCandlesPerPage;
  const planned = ranges.reduce((n, r) => n + Math.ceil((r.toMs - r.fromMs) / pageMs), 0);
  if (planned > maxUnits) {
    throw new ValidationError(
      '--from/--to',
      `a range of at most ${maxUnits} units of ${adapter.maxCandlesPerPage} ${timeframe} candles (this one needs ${planned}: split it, or raise --max-units)`,
    );
  }
  // A gap starts on the venue's grid; chunkRange aligns a start up to the UTC grid, which would drop
  // a US-equity day bar (New York midnight, 04:00Z or 05:00Z) starting a gap: its chunks start at
  // the UTC day holding it instead.
  const chunks = ranges.flatMap((r) =>
    chunkRange(req.ranges === 'gaps' ? alignDown(r.fromMs, timeframe) : r.fromMs, r.toMs, timeframe, adapter.maxCandlesPerPage),
  );
  if (chunks.length === 0) throw new ValidationError('--from', 'a range holding at least one candle open time');
  // A backfill of a job that does not exist yet creates it disabled: history only, no live
  // collection. Only now, so a refused range leaves no job behind.
  const job = existing ?? (await store.jobs.upsert({ venue: req.venue, type: 'ohlcv', symbol: req.symbol, timeframe, enabled: false }));
  return recordAndEnqueue(store, req.jobId, req.venue, job.priority, chunks);
}

/** Records the backfill with every chunk, then enqueues one unit per chunk. */
async function recordAndEnqueue(
  store: StateStore,
  jobId: string,
  venue: string,
  priority: number,
  chunks: Array<{ fromMs: number; toMs: number }>,
): Promise<Backfill> {
  const id = `bf-${randomUUID().slice(0, 8)}`;
  const fromMs = Math.min(...chunks.map((c) => c.fromMs));
  const toMs = Math.max(...chunks.map((c) => c.toMs));
  const units: QueuedUnit[] = chunks.map((c, chunkIndex) => ({
    kind: 'backfill',
    venue,
    jobId,
    backfillId: id,
    fromMs: c.fromMs,
    toMs: c.toMs,
    chunkIndex,
    priority,
    enqueuedAt: Date.now(),
  }));
  // Record first (with every chunk: the store is what is owed), then enqueue: a worker may finish
  // a unit the moment it is queued. If the units cannot be queued, the record says so instead of
  // waiting forever.
  const created = await store.backfills.create({ id, jobId, fromMs, toMs, chunks: chunks.map((c) => ({ fromMs: c.fromMs, toMs: c.toMs })) });
  try {
    await withQueues((queues) => queues.enqueue(units));
  } catch (err) {
    await store.backfills.setStatus(id, 'failed').catch(() => undefined);
    throw err;
  }
  return created;
}

async function withQueues<T>(fn: (queues: VenueQueues) => Promise<T>): Promise<T> {
  const { redisUrl, prefix } = fleetRedis();
  const { createRedisConnection, VenueQueues } = await import('@tickfleet/queues');
  const connection = createRedisConnection(redisUrl, { blocking: false, connectionName: 'tickfleet-cli' });
  const queues = new VenueQueues(connection, { prefix });
  try {
    return await fn(queues);
  } finally {
    await queues.close();
    connection.disconnect();
  }
}

async function getBackfill(store: StateStore, id: string): Promise<Backfill> {
  const bf = await store.backfills.get(id);
  if (!bf) throw new ValidationError('backfill id', 'an existing backfill (see tickfleet backfill list)', id);
  return bf;
}

/**
 * The range from the job's `since` to the first stored candle when candles are stored but none
 * from `since` on (`firstStored` undefined: the sink was not read; null: nothing stored).
 */
function missingHead(
  job: { since: number | null; cursor: number | null },
  timeframe: Timeframe,
  firstStored: number | null | undefined,
): { fromMs: number; toMs: number } | null {
  if (job.since === null || firstStored === undefined) return null;
  const fromMs = alignDown(job.since, timeframe);
  // Nothing stored yet: only what the live cursor claims to have passed is owed.
  const toMs = firstStored ?? (job.cursor === null ? null : job.cursor + timeframeMsOf(timeframe));
  return toMs !== null && toMs > fromMs ? { fromMs, toMs } : null;
}

/** Open time of the job's first stored candle (null: none), or undefined for a sink without a reader (JSONL). */
async function firstStoredOpenTime(sinkUrl: string, req: BackfillRequest): Promise<number | null | undefined> {
  return withSink(sinkUrl, async (sink) => {
    // Gap requests are candle jobs (gapRequest refuses any other), so the timeframe is there.
    if (!sink.reader || req.timeframe === undefined) return undefined;
    const summary = await sink.reader.countCandles({ venue: req.venue, symbol: req.symbol, timeframe: req.timeframe });
    return summary.firstOpenTime;
  });
}

async function report(store: StateStore, id: string): Promise<BackfillReport> {
  const bf = await getBackfill(store, id);
  const failed = bf.unitsFailed > 0 ? await store.backfills.chunks(id, { status: 'failed' }) : [];
  return { ...bf, failedChunks: failed.map((c) => ({ fromMs: c.fromMs, toMs: c.toMs, error: c.error })) };
}

/** Polls a backfill until it ends; on a TTY draws a progress bar with rate and ETA on stderr. */
async function follow(store: StateStore, id: string, showProgress: boolean): Promise<BackfillReport> {
  const bar = showProgress && process.stderr.isTTY ? new ProgressBar(process.stderr, 'units') : undefined;
  for (;;) {
    const bf = await getBackfill(store, id);
    bar?.update(bf.unitsDone + bf.unitsFailed, bf.unitsTotal);
    if (bf.status === 'done' || bf.status === 'cancelled' || bf.status === 'failed') {
      bar?.finish();
      return report(store, id);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

function printBackfills(list: Backfill[]): void {
  printTable(
    ['ID', 'JOB', 'FROM', 'TO', 'UNITS', 'FAILED', 'STATUS'],
    list.map((b) => [b.id, b.jobId, isoOrDash(b.fromMs), isoOrDash(b.toMs), `${b.unitsDone}/${b.unitsTotal}`, b.unitsFailed, b.status]),
  );
}

/** One line per failed chunk (the first 20), with the reason its unit gave up. */
function printFailures(bf: BackfillReport): void {
  const shown = bf.failedChunks.slice(0, 20);
  for (const c of shown) process.stdout.write(`failed chunk ${isoOrDash(c.fromMs)} .. ${isoOrDash(c.toMs)}: ${c.error ?? 'unknown reason'}\n`);
  if (bf.failedChunks.length > shown.length) process.stdout.write(`… and ${bf.failedChunks.length - shown.length} more failed chunks (--json lists all)\n`);
}
