import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { type Command } from 'commander';
import {
  formatDurationMs,
  jobId,
  parseOrThrow,
  type SeriesObservation,
  SymbolName,
  TIMEFRAMES,
  ValidationError,
  VenueName,
  type Timeframe,
} from '@tickfleet/core';
import {
  expectedCandleCount,
  findGaps,
  gridRuns,
  migrateJsonlLayout,
  openSink,
  splitByRequest,
  type DataReader,
  type Interval,
  type Sink,
} from '@tickfleet/sinks';
import { isoDate, oneOf } from '../args.js';
import { cliEnv } from '../cli-env.js';
import { noMatchHint } from '../no-match-hint.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';

/** `--sink <url>`: env TICKFLEET_SINK_URL, else the shared default sink. */
export function sinkOption(cmd: Command): Command {
  return cmd.option('--sink <url>', 'data sink URL (sqlite://path, mongodb://…, jsonl://dir)', cliEnv('TICKFLEET_SINK_URL').TICKFLEET_SINK_URL);
}

/** Opens the sink named by `--sink`, runs `fn`, and always closes it; a bad URL is reported as `--sink`. */
export async function withSink<T>(url: string, fn: (sink: Sink) => Promise<T>): Promise<T> {
  let sink: Sink;
  try {
    sink = await openSink(url, { mongodb: { maxRetries: 1 }, sqlite: { maxRetries: 1 } });
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError('--sink', err.expected, url);
    throw err;
  }
  try {
    return await fn(sink);
  } finally {
    await sink.close();
  }
}

/** The sink's reader; JSONL has none, which is said plainly. */
export function readerOf(sink: Sink): DataReader {
  if (!sink.reader) {
    throw new ValidationError(
      '--sink',
      'a sqlite:// or mongodb:// sink (jsonl:// is a raw append-only log with no index to count, export or scan)',
      sink.adapter,
    );
  }
  return sink.reader;
}

/** Every stored stream `data` reads: candles, and the envelope channels. */
const DATA_CHANNELS = ['candles', 'trades', 'book', 'options', 'series', 'markets', 'poll_stats', 'poll_errors', 'stream_events'] as const;
type DataChannel = (typeof DATA_CHANNELS)[number];
const CHANNEL_HELP =
  'candles | trades | book | options (option-chain contracts) | series (economic series, e.g. fred DGS10: observations, nulls, revisions) | markets (order-book membership changes) | poll_stats | poll_errors | stream_events (stream gaps, heals, unhealed ranges, resyncs) (symbol optional except for candles)';

interface RangeOptions {
  timeframe: Timeframe;
  channel: DataChannel;
  from?: number;
  to?: number;
  sink: string;
  json?: boolean;
}

interface ExportOptions extends RangeOptions {
  format: 'csv' | 'jsonl';
  out?: string;
}

export function registerData(program: Command): void {
  const data = program.command('data').description('stored market data: counts, exports and the JSONL layout migration');
  registerMigrateJsonl(data);

  sinkOption(
    data
      .command('count <venue> [symbol]')
      .description(
        'count stored candles of a series (count; expected by the venue trading calendar in what was requested: backfills and the live range; first, last, open gaps, missing candles; and apart, what was never requested), or the records of another channel',
      )
      .option('--channel <channel>', CHANNEL_HELP, oneOf('--channel', DATA_CHANNELS), 'candles')
      .option('--timeframe <tf>', `candle timeframe (${TIMEFRAMES.join(' ')}); required for candles`, oneOf('--timeframe', TIMEFRAMES))
      .option('--from <date>', 'first open time for candles, receive time otherwise (ISO date, inclusive)', isoDate('--from'))
      .option('--to <date>', 'last open time for candles, receive time otherwise (ISO date, exclusive)', isoDate('--to'))
      .addOption(jsonOption()),
  ).action(async (venue: string, symbol: string | undefined, opts: RangeOptions, cmd: Command) => {
    if (opts.channel === 'series' && symbol !== undefined) return countSeries(venue, symbol, opts);
    if (opts.channel !== 'candles') return countEnvelopes(venue, symbol, opts);
    if (symbol === undefined) throw new ValidationError('symbol', 'a symbol to count candles');
    if (!opts.timeframe) throw new ValidationError('--timeframe', 'a candle timeframe to count candles');
    const q = series(venue, symbol, opts);
    const result = await withSink(opts.sink, async (sink) => {
      const reader = readerOf(sink);
      const summary = await reader.countCandles(q);
      // Missing = what the venue's trading calendar expects between stored candles (no nights, weekends or holidays on equity venues).
      const missing = await findGaps(reader, q);
      const span =
        summary.firstOpenTime === null && (q.fromMs === undefined || q.toMs === undefined)
          ? []
          : [{ fromMs: q.fromMs ?? summary.firstOpenTime!, toMs: q.toMs ?? summary.lastOpenTime! + 1 }];
      const id = jobId({ venue: q.venue, symbol: q.symbol, timeframe: q.timeframe, type: 'ohlcv' });
      // Split by what was requested (backfills, live range): a hole there is missing, the rest was never asked for.
      const { gaps, holes, covered } = await withStore(cmd, async (store) => ({
        gaps: await store.gaps.list({ jobId: id, open: true }),
        holes: await splitByRequest(store, reader, q, missing),
        covered: await splitByRequest(store, reader, q, span),
      }));
      const inRange = gaps.filter((g) => (q.fromMs === undefined || g.toMs > q.fromMs) && (q.toMs === undefined || g.fromMs < q.toMs));
      const candles = (parts: readonly Interval[]): number => parts.reduce((n, p) => n + expectedCandleCount(q.venue, q.timeframe, p.fromMs, p.toMs), 0);
      const holeRuns = holes.requested.flatMap((part) => gridRuns(q.venue, q.timeframe, part));
      const neverRequested = covered.neverRequested.map((r) => ({ ...r, candles: candles([r]) })).filter((r) => r.candles > 0);
      return {
        ...q,
        ...summary,
        expected: candles(covered.requested),
        openGaps: inRange.length,
        missingIntervals: holeRuns.length,
        missingCandles: candles(holeRuns),
        neverRequestedCandles: candles(neverRequested),
        neverRequested,
      };
    });
    // No-match hint: nothing stored and no job of the venue for the symbol as typed (BTCUSDT for BTC/USDT).
    if (result.count === 0) {
      const hint = await withStore(cmd, (store) => noMatchHint(store, q.venue, q.symbol));
      if (hint !== undefined) process.stderr.write(`${hint}\n`);
    }
    if (opts.json) return printJson(result);
    printTable(
      ['venue', 'symbol', 'timeframe', 'count', 'expected', 'first', 'last', 'open gaps', 'missing candles'],
      [
        [
          result.venue,
          result.symbol,
          result.timeframe,
          result.count,
          result.expected,
          isoOrDash(result.firstOpenTime),
          isoOrDash(result.lastOpenTime),
          result.openGaps,
          result.missingCandles,
        ],
      ],
    );
    if (result.neverRequestedCandles > 0) process.stdout.write(`${neverRequestedLine(result.neverRequestedCandles, result.neverRequested)}\n`);
  });

  sinkOption(
    data
      .command('export <venue> [symbol]')
      .description('stream stored records as CSV or JSON lines (stdout, or --out); progress on a TTY')
      .requiredOption('--format <format>', 'csv | jsonl', oneOf('--format', ['csv', 'jsonl'] as const))
      .option('--channel <channel>', CHANNEL_HELP, oneOf('--channel', DATA_CHANNELS), 'candles')
      .option('--timeframe <tf>', `candle timeframe (${TIMEFRAMES.join(' ')}); required for candles`, oneOf('--timeframe', TIMEFRAMES))
      .option('--from <date>', 'from (ISO date, inclusive): open time for candles, observation date for series, receive time otherwise', isoDate('--from'))
      .option('--to <date>', 'to (ISO date, exclusive)', isoDate('--to'))
      .option('--out <file>', 'write to a file instead of stdout'),
  ).action(async (venue: string, symbol: string | undefined, opts: ExportOptions) => {
    if (opts.channel === 'candles' && !opts.timeframe) throw new ValidationError('--timeframe', 'a candle timeframe to export candles');
    if (opts.channel === 'candles' && symbol === undefined) throw new ValidationError('symbol', 'a symbol to export candles');
    const v = parseOrThrow(VenueName, venue, 'venue');
    const s = symbol === undefined ? undefined : parseOrThrow(SymbolName, symbol, 'symbol');
    const range = { ...(opts.from === undefined ? {} : { fromMs: opts.from }), ...(opts.to === undefined ? {} : { toMs: opts.to }) };
    await withSink(opts.sink, async (sink) => {
      const reader = readerOf(sink);
      const out: Writable = opts.out ? createWriteStream(opts.out) : process.stdout;
      const progress = new Progress(process.stderr.isTTY === true && (opts.out !== undefined || !process.stdout.isTTY));
      let rows: AsyncIterable<string>;
      if (opts.channel === 'candles') {
        const q = { venue: v, symbol: s!, timeframe: opts.timeframe, ...range };
        progress.total = (await reader.countCandles(q)).count;
        rows = candleRows(reader, q, opts.format);
      } else if (opts.channel === 'series' && s !== undefined) {
        const q = { venue: v, symbol: s, channel: 'series' as const };
        progress.total = await reader.countEnvelopes(q);
        rows = seriesRows(observations(reader, q, range), opts.format);
      } else {
        const q = { venue: v, ...(s === undefined ? {} : { symbol: s }), channel: opts.channel, ...range };
        progress.total = await reader.countEnvelopes(q);
        rows = envelopeRows(reader, q, opts.format);
      }
      let chunk: string[] = [];
      const write = async (text: string): Promise<void> => {
        if (!out.write(text)) await once(out, 'drain');
      };
      for await (const row of rows) {
        chunk.push(row);
        if (chunk.length >= 1000) {
          await write(chunk.join(''));
          progress.add(chunk.length);
          chunk = [];
        }
      }
      if (chunk.length) await write(chunk.join(''));
      progress.add(chunk.length);
      progress.done();
      if (opts.out) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    });
  });
}

/**
 * `never requested: N candles (from to, …)`: stretches between stored candles outside every backfill
 * and the live range, told apart from missing candles (never fetched is not lost).
 */
export function neverRequestedLine(candles: number, ranges: readonly Interval[]): string {
  const shown = ranges.slice(0, NEVER_REQUESTED_SHOWN).map((r) => `${isoOrDash(r.fromMs)} to ${isoOrDash(r.toMs)}`);
  const more = ranges.length > NEVER_REQUESTED_SHOWN ? `, and ${ranges.length - NEVER_REQUESTED_SHOWN} more ranges` : '';
  return `never requested: ${candles} candles (${shown.join(', ')}${more}), outside every backfill and the live range: not missing; tickfleet backfill fetches them`;
}

/** Never-requested ranges a human-readable line names before it says how many more there are. */
const NEVER_REQUESTED_SHOWN = 3;

/** `data count --channel <not candles>`: the stored records of the channel, of one symbol or all of the venue's. */
async function countEnvelopes(venue: string, symbol: string | undefined, opts: RangeOptions): Promise<void> {
  if (opts.from !== undefined && opts.to !== undefined && opts.to <= opts.from)
    throw new ValidationError('--to', 'a time after --from', new Date(opts.to).toISOString());
  const channel = opts.channel as Exclude<DataChannel, 'candles'>;
  const q = {
    venue: parseOrThrow(VenueName, venue, 'venue'),
    channel,
    ...(symbol === undefined ? {} : { symbol: parseOrThrow(SymbolName, symbol, 'symbol') }),
    ...(opts.from === undefined ? {} : { fromMs: opts.from }),
    ...(opts.to === undefined ? {} : { toMs: opts.to }),
  };
  const count = await withSink(opts.sink, (sink) => readerOf(sink).countEnvelopes(q));
  const result = { ...q, count };
  if (opts.json) return printJson(result);
  printTable(['venue', 'channel', 'symbol', 'count'], [[q.venue, channel, q.symbol ?? '(all)', count]]);
}

function registerMigrateJsonl(data: Command): void {
  data
    .command('migrate-jsonl <dir>')
    .description(
      'move a JSONL sink root (a dir or jsonl://dir) from <stream>/date=… to the per-venue <venue>/<stream>/date=… layout, and <venue>/book/ to <venue>/orderbooks/; idempotent',
    )
    .addOption(jsonOption())
    .action((dir: string, opts: { json?: boolean }) => {
      const root = dir.startsWith('jsonl://') ? dir.slice('jsonl://'.length) : dir;
      if (!existsSync(root)) throw new ValidationError('<dir>', 'an existing JSONL sink root', dir);
      const result = migrateJsonlLayout(root);
      if (opts.json) return printJson(result);
      const venues = Object.entries(result.records);
      if (result.files === 0 && result.bookFiles === 0) {
        process.stdout.write(`${root}: already in the per-venue layout, nothing to move\n`);
        return;
      }
      if (result.files > 0) {
        printTable(
          ['venue', 'records'],
          venues.map(([venue, n]) => [venue, n]),
        );
        process.stdout.write(`${root}: moved ${result.files} files of ${result.streams.join(', ')} into <venue>/<stream>/date=…\n`);
      }
      if (result.bookFiles > 0) {
        process.stdout.write(`${root}: moved ${result.bookFiles} order-book files from ${result.bookDirs.join(', ')} into <venue>/orderbooks/\n`);
      }
    });
}

function series(venue: string, symbol: string, opts: RangeOptions): { venue: string; symbol: string; timeframe: Timeframe; fromMs?: number; toMs?: number } {
  if (opts.from !== undefined && opts.to !== undefined && opts.to <= opts.from)
    throw new ValidationError('--to', 'a time after --from', new Date(opts.to).toISOString());
  return {
    venue: parseOrThrow(VenueName, venue, 'venue'),
    symbol: parseOrThrow(SymbolName, symbol, 'symbol'),
    timeframe: opts.timeframe,
    ...(opts.from === undefined ? {} : { fromMs: opts.from }),
    ...(opts.to === undefined ? {} : { toMs: opts.to }),
  };
}

async function* candleRows(reader: DataReader, q: Parameters<DataReader['streamCandles']>[0], format: 'csv' | 'jsonl'): AsyncIterable<string> {
  if (format === 'csv') yield 'open_time,open_time_iso,open,high,low,close,volume,trades\n';
  for await (const c of reader.streamCandles(q)) {
    if (format === 'jsonl') yield `${JSON.stringify(c)}\n`;
    else yield `${c.openTime},${new Date(c.openTime).toISOString()},${c.open},${c.high},${c.low},${c.close},${c.volume},${c.trades ?? ''}\n`;
  }
}

async function* envelopeRows(reader: DataReader, q: Parameters<DataReader['streamEnvelopes']>[0], format: 'csv' | 'jsonl'): AsyncIterable<string> {
  if (format === 'csv') yield 'key,received_at_ms,server_time_ms,payload\n';
  for await (const { key, envelope: e } of reader.streamEnvelopes(q)) {
    if (format === 'jsonl') yield `${JSON.stringify({ key, ...e })}\n`;
    else yield `${csvCell(key)},${e.receivedAtMs},${e.serverTimeMs ?? ''},${csvCell(JSON.stringify(e.payload))}\n`;
  }
}

/**
 * `data count <venue> <series> --channel series`: the stored observation records of one economic
 * series (`records`, one per vintage), the distinct observation `dates`, how many records carry no
 * value (`nulls`: a holiday in a daily series, FRED's "."), how many are revisions of a date
 * already stored (`revisions`), and the first and last date. Nulls are holes the publisher
 * declared, not gaps: a series job has no gap ledger.
 */
async function countSeries(venue: string, symbol: string, opts: RangeOptions): Promise<void> {
  if (opts.from !== undefined && opts.to !== undefined && opts.to <= opts.from)
    throw new ValidationError('--to', 'a time after --from', new Date(opts.to).toISOString());
  const q = { venue: parseOrThrow(VenueName, venue, 'venue'), symbol: parseOrThrow(SymbolName, symbol, 'symbol'), channel: 'series' as const };
  const range = { ...(opts.from === undefined ? {} : { fromMs: opts.from }), ...(opts.to === undefined ? {} : { toMs: opts.to }) };
  const result = await withSink(opts.sink, async (sink) => {
    const dates = new Set<string>();
    let records = 0;
    let nulls = 0;
    for await (const o of observations(readerOf(sink), q, range)) {
      records += 1;
      if (o.value === null) nulls += 1;
      dates.add(o.date);
    }
    const sorted = [...dates].sort();
    return {
      venue: q.venue,
      symbol: q.symbol,
      channel: 'series',
      records,
      dates: dates.size,
      nulls,
      revisions: records - dates.size,
      firstDate: sorted[0] ?? null,
      lastDate: sorted.at(-1) ?? null,
    };
  });
  if (opts.json) return printJson(result);
  printTable(
    ['venue', 'series', 'records', 'dates', 'nulls', 'revisions', 'first', 'last'],
    [[result.venue, result.symbol, result.records, result.dates, result.nulls, result.revisions, result.firstDate ?? '-', result.lastDate ?? '-']],
  );
}

/** The stored observations of one series with a date in `[fromMs, toMs)`, in the order they were stored. */
async function* observations(
  reader: DataReader,
  q: { venue: string; symbol: string; channel: 'series' },
  range: { fromMs?: number; toMs?: number },
): AsyncIterable<SeriesObservation> {
  const from = range.fromMs === undefined ? undefined : new Date(range.fromMs).toISOString().slice(0, 10);
  const to = range.toMs === undefined ? undefined : new Date(range.toMs).toISOString().slice(0, 10);
  for await (const { envelope } of reader.streamEnvelopes(q)) {
    const o = envelope.payload as SeriesObservation;
    if ((from === undefined || o.date >= from) && (to === undefined || o.date < to)) yield o;
  }
}

async function* seriesRows(rows: AsyncIterable<SeriesObservation>, format: 'csv' | 'jsonl'): AsyncIterable<string> {
  if (format === 'csv') yield 'series_id,date,value,realtime_start,realtime_end,units\n';
  for await (const o of rows) {
    if (format === 'jsonl') yield `${JSON.stringify(o)}\n`;
    // An empty value cell is a date without a value (null), never 0.
    else yield `${csvCell(o.symbol)},${o.date},${o.value ?? ''},${o.realtimeStart},${o.realtimeEnd},${csvCell(o.units)}\n`;
  }
}

function csvCell(text: string): string {
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rate and ETA on stderr, redrawn at most 4 times a second; silent when not on a TTY. */
class Progress {
  total = 0;
  private done_ = 0;
  private readonly startedMs = Date.now();
  private lastDrawMs = 0;

  constructor(private readonly enabled: boolean) {}

  add(n: number): void {
    this.done_ += n;
    const now = Date.now();
    if (this.enabled && now - this.lastDrawMs >= 250) {
      this.lastDrawMs = now;
      this.draw(now);
    }
  }

  done(): void {
    if (!this.enabled) return;
    this.draw(Date.now());
    process.stderr.write('\n');
  }

  private draw(now: number): void {
    const rate = this.done_ / Math.max(0.001, (now - this.startedMs) / 1000);
    const eta = rate > 0 && this.total > this.done_ ? formatDurationMs(((this.total - this.done_) / rate) * 1000) : '0s';
    process.stderr.write(`\rexported ${this.done_}/${this.total} records, ${Math.round(rate)}/s, ETA ${eta}   `);
  }
}
