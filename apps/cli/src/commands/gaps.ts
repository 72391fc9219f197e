import { type Command } from 'commander';
import { parseJobId, ValidationError, type Gap } from '@tickfleet/core';
import { expectedCandleCount, findGaps, GapLedger, splitByRequest } from '@tickfleet/sinks';
import { isoDate } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable, withDefaultCommandHelp } from '../output.js';
import { withStore } from '../store-context.js';
import { neverRequestedLine, readerOf, sinkOption, withSink } from './data.js';

interface ListOptions {
  json?: boolean;
  all?: boolean;
  neverRequested?: boolean;
  sink: string;
}

interface ScanOptions {
  json?: boolean;
  sink: string;
  from?: number;
  to?: number;
}

export function registerGaps(program: Command): void {
  const gaps = program
    .command('gaps')
    .description(
      'the gap ledger: holes between stored candles in what was requested (backfills, the live range; gaps scan <jobId> detects them now) and trade ids streams could not heal (kind trade-ids)',
    );

  const listCommand = gaps
    // The default subcommand, so `tickfleet gaps [jobId]` lists: as the group's own action its
    // options would be the group's, and commander lets a group claim them anywhere on the line,
    // `gaps scan <jobId> --json` included.
    .command('list', { isDefault: true })
    .description('list the ledger (the default: tickfleet gaps [jobId] is tickfleet gaps list [jobId])')
    .argument('[jobId]', 'only this job, e.g. binance:BTC/USDT:1m:ohlcv')
    .option('--all', 'include filled gaps')
    .option(
      '--never-requested',
      'instead of the ledger, the stretches between stored candles of <jobId> that no backfill and not the live range asked for (read from the sink; not gaps)',
    )
    .addOption(jsonOption())
    .action(async (id: string | undefined, opts: ListOptions, cmd: Command) => {
      if (id !== undefined) parseJobId(id);
      if (opts.neverRequested) return listNeverRequested(id, opts, cmd);
      const list = await withStore(cmd, (store) => store.gaps.list({ ...(id ? { jobId: id } : {}), ...(opts.all ? {} : { open: true }) }));
      if (opts.json) return printJson(list);
      // Nothing to list: one line saying so, not a bare header.
      if (list.length === 0) return void process.stdout.write(`no ${opts.all ? '' : 'open '}gaps on the ledger${id ? ` for ${id}` : ''}\n`);
      printGaps(list);
    });
  // --sink: read only with --never-requested.
  sinkOption(listCommand);
  withDefaultCommandHelp(gaps, listCommand, [
    'tickfleet gaps                                    # open holes of every job',
    'tickfleet gaps scan binance:BTC/USDT:1m:ohlcv     # look for holes now',
    'tickfleet backfill --gaps binance:BTC/USDT:1m:ohlcv',
  ]);

  sinkOption(
    gaps
      .command('scan <jobId>')
      .description('find missing candles of a job in the sink and record them in the ledger')
      .option('--from <date>', 'scan from (ISO date, inclusive)', isoDate('--from'))
      .option('--to <date>', 'scan to (ISO date, exclusive)', isoDate('--to'))
      .addOption(jsonOption()),
  ).action(async (id: string, opts: ScanOptions, cmd: Command) => {
    parseJobId(id);
    const range = { ...(opts.from === undefined ? {} : { fromMs: opts.from }), ...(opts.to === undefined ? {} : { toMs: opts.to }) };
    const result = await withSink(opts.sink, (sink) => withStore(cmd, (store) => new GapLedger(store, readerOf(sink)).scan(id, range)));
    if (opts.json) return printJson({ jobId: id, ...result });
    const removed = result.removed > 0 ? `, ${result.removed} removed (never requested)` : '';
    process.stdout.write(`${id}: ${result.open.length} open gaps, ${result.recorded} newly recorded, ${result.filled} filled${removed}\n`);
    if (result.neverRequested.length > 0) {
      const { venue, timeframe } = parseJobId(id);
      const candles = result.neverRequested.reduce((n, r) => n + expectedCandleCount(venue, timeframe!, r.fromMs, r.toMs), 0);
      process.stdout.write(`${neverRequestedLine(candles, result.neverRequested)} (tickfleet gaps ${id} --never-requested lists them)\n`);
    }
  });
}

/** `gaps <jobId> --never-requested`: what lies between stored candles of a candle job that was never asked for. */
async function listNeverRequested(id: string | undefined, opts: ListOptions, cmd: Command): Promise<void> {
  if (id === undefined) throw new ValidationError('jobId', 'a candle job id with --never-requested, e.g. binance:BTC/USDT:1m:ohlcv');
  const { venue, symbol, timeframe, type } = parseJobId(id);
  if (type !== 'ohlcv' || !timeframe) throw new ValidationError('jobId', 'a candle (ohlcv) job with a timeframe', id);
  const series = { venue, symbol, timeframe };
  const ranges = await withSink(opts.sink, async (sink) => {
    const reader = readerOf(sink);
    const missing = await findGaps(reader, series);
    const { neverRequested } = await withStore(cmd, (store) => splitByRequest(store, reader, series, missing));
    return neverRequested.map((r) => ({ jobId: id, ...r, candles: expectedCandleCount(venue, timeframe, r.fromMs, r.toMs) })).filter((r) => r.candles > 0);
  });
  if (opts.json) return printJson(ranges);
  printTable(
    ['job', 'from', 'to', 'candles'],
    ranges.map((r) => [r.jobId, isoOrDash(r.fromMs), isoOrDash(r.toMs), r.candles]),
  );
}

function printGaps(list: Gap[]): void {
  printTable(
    ['job', 'from', 'to', 'kind', 'attempts', 'detected', 'filled'],
    // A stream's unhealed trades (kind trade-ids) hold trade ids [first, last + 1), not times: shown as the inclusive ids.
    list.map((g) => [
      g.jobId,
      g.kind === 'trade-ids' ? `trade id ${g.fromMs}` : isoOrDash(g.fromMs),
      g.kind === 'trade-ids' ? `trade id ${g.toMs - 1}` : isoOrDash(g.toMs),
      g.kind,
      g.attempts,
      isoOrDash(g.detectedAt),
      isoOrDash(g.filledAt),
    ]),
  );
}
