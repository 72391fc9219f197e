import { type Command } from 'commander';
import { parseJobId, type Gap } from '@tickfleet/core';
import { GapLedger } from '@tickfleet/sinks';
import { isoDate } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';
import { readerOf, sinkOption, withSink } from './data.js';

interface ListOptions {
  json?: boolean;
  all?: boolean;
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
    .description('the gap ledger: holes between stored candles (gaps scan <jobId> detects them now) and trade ids streams could not heal (kind trade-ids)');

  gaps
    // The default subcommand, so `tickfleet gaps [jobId]` lists: as the group's own action its
    // options would be the group's, and commander lets a group claim them anywhere on the line,
    // `gaps scan <jobId> --json` included.
    .command('list', { isDefault: true })
    .description('list the ledger (the default: tickfleet gaps [jobId] is tickfleet gaps list [jobId])')
    .argument('[jobId]', 'only this job, e.g. binance:BTC/USDT:1m:ohlcv')
    .option('--all', 'include filled gaps')
    .addOption(jsonOption())
    .action(async (id: string | undefined, opts: ListOptions, cmd: Command) => {
      if (id !== undefined) parseJobId(id);
      const list = await withStore(cmd, (store) => store.gaps.list({ ...(id ? { jobId: id } : {}), ...(opts.all ? {} : { open: true }) }));
      if (opts.json) return printJson(list);
      printGaps(list);
    });

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
    const result = await withSink(opts.sink, (sink) => withStore(cmd, (store) => new GapLedger(store.gaps, readerOf(sink)).scan(id, range)));
    if (opts.json) return printJson({ jobId: id, ...result });
    process.stdout.write(`${id}: ${result.open.length} open gaps, ${result.recorded} newly recorded, ${result.filled} filled\n`);
  });
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
