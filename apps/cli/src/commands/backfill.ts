import { randomUUID } from 'node:crypto';
import { type Command } from 'commander';
import {
  type Backfill,
  chunkRange,
  jobId as makeJobId,
  parseJobId,
  parseOrThrow,
  SymbolName,
  type Timeframe,
  TIMEFRAMES,
  ValidationError,
  VenueName,
} from '@tickfleet/core';
import type { QueuedUnit, VenueQueues } from '@tickfleet/queues';
import { gapsToRanges } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import { createVenueAdapter, hasVenueAdapter, isCandleSource } from '@tickfleet/venues';
import { isoDate, oneOf } from '../args.js';
import { fleetRedis } from '../fleet-context.js';
import { isoOrDash, printJson, printTable } from '../output.js';
import { ProgressBar } from '../progress-bar.js';
import { withStore } from '../store-context.js';

interface BackfillOptions {
  timeframe?: Timeframe;
  from?: number;
  to?: number;
  gaps?: string;
  follow?: boolean;
  json?: boolean;
}

export function registerBackfill(program: Command): void {
  const backfill = program
    .command('backfill')
    .description('collect a past range of candles (or a job\'s open gaps) as page-sized units below live work')
    .argument('[venue]', 'venue, e.g. binance')
    .argument('[symbol]', 'symbol, e.g. BTC/USDT')
    .option('--timeframe <tf>', `candle timeframe (${TIMEFRAMES.join(' ')})`, oneOf('--timeframe', TIMEFRAMES))
    .option('--from <iso>', 'range start (inclusive), e.g. 2024-01-01', isoDate('--from'))
    .option('--to <iso>', 'range end (exclusive), e.g. 2024-02-01', isoDate('--to'))
    .option('--gaps <jobId>', "turn the job's open gaps (not venue holes) into units instead of a range")
    .option('--follow', 'wait and show progress until the backfill is done')
    .option('--json', 'print JSON')
    .action(async (venue: string | undefined, symbol: string | undefined, opts: BackfillOptions, cmd: Command) => {
      const request = opts.gaps !== undefined ? gapRequest(opts.gaps) : rangeRequest(venue, symbol, opts);
      const created = await withStore(cmd, async (store) => enqueueBackfill(store, request));
      if (!opts.follow) {
        if (opts.json) printJson(created);
        else if (created) process.stdout.write(`${created.id}: ${created.unitsTotal} units for ${created.jobId} ${isoOrDash(created.fromMs)} .. ${isoOrDash(created.toMs)}\n`);
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
      else process.stdout.write(`${final.id}: ${final.status}, ${final.unitsDone}/${final.unitsTotal} units\n`);
    });

  backfill
    .command('status <id>')
    .description('show a backfill')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const found = await withStore(cmd, (store) => getBackfill(store, id));
      if (opts.json) printJson(found);
      else printBackfills([found]);
    });

  backfill
    .command('list')
    .description('list backfills')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const all = await withStore(cmd, (store) => store.backfills.list());
      if (opts.json) printJson(all);
      else printBackfills(all);
    });

  backfill
    .command('cancel <id>')
    .description('cancel a backfill: its queued units are removed, running ones finish')
    .option('--json', 'print JSON')
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
  timeframe: Timeframe;
  symbol: string;
  ranges: Array<{ fromMs: number; toMs: number }> | 'gaps';
}

function rangeRequest(venue: string | undefined, symbol: string | undefined, opts: BackfillOptions): BackfillRequest {
  if (venue === undefined) throw new ValidationError('venue', 'a venue argument (tickfleet backfill <venue> <symbol> --timeframe 1m --from … --to …)');
  if (symbol === undefined) throw new ValidationError('symbol', 'a symbol argument, e.g. BTC/USDT');
  const v = parseOrThrow(VenueName, venue, 'venue');
  const s = parseOrThrow(SymbolName, symbol, 'symbol');
  if (!opts.timeframe) throw new ValidationError('--timeframe', 'a timeframe, e.g. --timeframe 1m');
  if (opts.from === undefined) throw new ValidationError('--from', 'a range start, e.g. --from 2024-01-01');
  if (opts.to === undefined) throw new ValidationError('--to', 'a range end, e.g. --to 2024-01-08');
  if (opts.to <= opts.from) throw new ValidationError('--to', `a time after --from (${new Date(opts.from).toISOString()})`, new Date(opts.to).toISOString());
  return { jobId: makeJobId({ venue: v, symbol: s, timeframe: opts.timeframe, type: 'ohlcv' }), venue: v, symbol: s, timeframe: opts.timeframe, ranges: [{ fromMs: opts.from, toMs: opts.to }] };
}

function gapRequest(id: string): BackfillRequest {
  const parsed = parseJobId(id);
  if (parsed.type !== 'ohlcv' || !parsed.timeframe) throw new ValidationError('--gaps', 'a candle job id such as binance:BTC/USDT:1m:ohlcv', id);
  return { jobId: id, venue: parsed.venue, symbol: parsed.symbol, timeframe: parsed.timeframe, ranges: 'gaps' };
}

/** Records the backfill and enqueues one unit per page-sized chunk; returns null when there is nothing to do. */
async function enqueueBackfill(store: StateStore, req: BackfillRequest): Promise<Backfill | null> {
  const connector = await store.connectors.get(req.venue);
  if (!connector) throw new ValidationError('venue', `an existing connector (create it with tickfleet connectors upsert ${req.venue} …)`, req.venue);
  if (!hasVenueAdapter(req.venue)) throw new ValidationError('venue', 'a venue with a candle adapter (binance, polygon)', req.venue);
  const adapter = createVenueAdapter(req.venue, { baseUrl: connector.baseUrl });
  if (!isCandleSource(adapter)) throw new ValidationError('venue', 'a venue with candles (binance, polygon)', req.venue);
  let job = await store.jobs.get(req.jobId);
  if (!job) {
    if (req.ranges === 'gaps') throw new ValidationError('--gaps', 'an existing job (see tickfleet jobs list)', req.jobId);
    // A backfill of a job that does not exist yet creates it disabled: history only, no live collection.
    job = await store.jobs.upsert({ venue: req.venue, type: 'ohlcv', symbol: req.symbol, timeframe: req.timeframe, enabled: false });
  }
  let ranges: Array<{ fromMs: number; toMs: number }>;
  if (req.ranges === 'gaps') {
    const open = (await store.gaps.list({ jobId: req.jobId, open: true })).filter((g) => g.kind === 'missing');
    ranges = gapsToRanges(open);
    if (ranges.length === 0) return null;
  } else {
    ranges = req.ranges;
  }
  const chunks = ranges.flatMap((r) => chunkRange(r.fromMs, r.toMs, req.timeframe, adapter.maxCandlesPerPage));
  if (chunks.length === 0) throw new ValidationError('--from', 'a range holding at least one candle open time');
  const id = `bf-${randomUUID().slice(0, 8)}`;
  const fromMs = Math.min(...chunks.map((c) => c.fromMs));
  const toMs = Math.max(...chunks.map((c) => c.toMs));
  const units: QueuedUnit[] = chunks.map((c, chunkIndex) => ({
    kind: 'backfill',
    venue: req.venue,
    jobId: req.jobId,
    backfillId: id,
    fromMs: c.fromMs,
    toMs: c.toMs,
    chunkIndex,
    priority: job.priority,
    enqueuedAt: Date.now(),
  }));
  // Record first, then enqueue: a worker may finish a unit the moment it is queued, and counts it
  // against this record. If the units cannot be queued, the record says so instead of waiting forever.
  const created = await store.backfills.create({ id, jobId: req.jobId, fromMs, toMs, unitsTotal: units.length });
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

/** Polls a backfill until it ends; on a TTY draws a progress bar with rate and ETA on stderr. */
async function follow(store: StateStore, id: string, showProgress: boolean): Promise<Backfill> {
  const bar = showProgress && process.stderr.isTTY ? new ProgressBar(process.stderr, 'units') : undefined;
  for (;;) {
    const bf = await getBackfill(store, id);
    bar?.update(bf.unitsDone, bf.unitsTotal);
    if (bf.status === 'done' || bf.status === 'cancelled' || bf.status === 'failed') {
      bar?.finish();
      return bf;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

function printBackfills(list: Backfill[]): void {
  printTable(
    ['ID', 'JOB', 'FROM', 'TO', 'UNITS', 'STATUS'],
    list.map((b) => [b.id, b.jobId, isoOrDash(b.fromMs), isoOrDash(b.toMs), `${b.unitsDone}/${b.unitsTotal}`, b.status]),
  );
}
