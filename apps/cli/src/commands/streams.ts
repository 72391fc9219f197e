import { type Command } from 'commander';
import {
  BINANCE_BOOK_DEPTH,
  BINANCE_STREAMS_PER_CONNECTION,
  DEFAULT_STREAM_BOOK_DEPTH,
  KRAKEN_MAX_STREAM_SYMBOLS,
  KRAKEN_STREAM_BOOK_DEPTHS,
  parseOrThrow,
  parseStreamInput,
  STREAM_CHANNELS,
  STREAM_VENUES,
  type StreamDefinition,
  type StreamInput,
  StreamName,
  type StreamSpec,
  ValidationError,
  VenueName,
} from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';
import { positiveInt } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';

interface AddOptions {
  venue: string;
  symbols: string;
  channels?: string;
  bookDepth?: number;
  disabled?: boolean;
  json?: boolean;
}

/** The CLI spelling of each StreamInput field, so an error names the option the operator typed. */
const OPTION_OF: Record<string, string> = { venue: '--venue', symbols: '--symbols', channels: '--channels', bookDepth: '--book-depth' };

export function registerStreams(program: Command): void {
  const streams = program
    .command('streams')
    .description(`long-lived WebSocket streams (${STREAM_VENUES.join(', ')}): one venue connection for a set of symbols and channels, held by one worker`);

  streams
    .command('add <name>')
    .description('add a stream or replace its definition (a replace that changes nothing leaves it as it is)')
    .requiredOption('--venue <venue>', `venue with streams (${STREAM_VENUES.join(', ')}); needs its connector (tickfleet connectors upsert)`)
    .requiredOption(
      '--symbols <list>',
      `comma-separated pairs such as BTC/USDT,ETH/USDT (binance: ${BINANCE_STREAMS_PER_CONNECTION} symbol-channel pairs, so 512 symbols with both channels; kraken: ${KRAKEN_MAX_STREAM_SYMBOLS} symbols)`,
    )
    .option('--channels <list>', `comma-separated, of ${STREAM_CHANNELS.join(', ')} (default trades)`)
    .option(
      '--book-depth <n>',
      `book levels: binance ${BINANCE_BOOK_DEPTH.min}..${BINANCE_BOOK_DEPTH.max} (default ${DEFAULT_STREAM_BOOK_DEPTH.binance}), kraken ${KRAKEN_STREAM_BOOK_DEPTHS.join('|')} (default ${DEFAULT_STREAM_BOOK_DEPTH.kraken})`,
      positiveInt('--book-depth'),
    )
    .option('--disabled', 'store it disabled (no worker holds it until streams enable); a replace without it keeps the stored state')
    .addOption(jsonOption('print the stream as JSON'))
    .action(async (name: string, opts: AddOptions, cmd: Command) => {
      const input: StreamInput = {
        name,
        venue: opts.venue,
        symbols: splitList(opts.symbols),
        ...(opts.channels !== undefined ? { channels: splitList(opts.channels) } : {}),
        ...(opts.bookDepth !== undefined ? { bookDepth: opts.bookDepth } : {}),
        ...(opts.disabled ? { enabled: false } : {}),
      };
      // Checked before the store opens: bad input is refused the same with or without a store.
      const spec = namingOptions(() => parseStreamInput(input));
      const stream = await withStore(cmd, async (store) => {
        await assertConnector(store, spec);
        return store.streams.upsert(input);
      });
      if (opts.json) printJson(stream);
      else printStreams([stream]);
    });

  streams
    .command('list')
    .description('list streams')
    .option('--venue <venue>', 'only this venue')
    .addOption(jsonOption())
    .action(async (opts: { venue?: string; json?: boolean }, cmd: Command) => {
      const venue = opts.venue === undefined ? undefined : parseOrThrow(VenueName, opts.venue, '--venue');
      const list = await withStore(cmd, (store) => store.streams.list(venue === undefined ? {} : { venue }));
      if (opts.json) printJson(list);
      else if (list.length === 0)
        process.stdout.write(
          venue === undefined ? 'no streams defined (add one: tickfleet streams add <name> --venue binance --symbols BTC/USDT)\n' : `no streams of ${venue}\n`,
        );
      else printStreams(list);
    });

  streams
    .command('show <name>')
    .description('show one stream and its symbols')
    .addOption(jsonOption())
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      const stream = await withStore(cmd, (store) => getStream(store, name));
      if (opts.json) printJson(stream);
      else {
        printStreams([stream]);
        process.stdout.write(`${stream.symbols.join('\n')}\n`);
      }
    });

  streams
    .command('remove <name>')
    .description('remove a stream; its holder closes the connection')
    .addOption(jsonOption())
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      const key = parseOrThrow(StreamName, name, 'stream name');
      const removed = await withStore(cmd, (store) => store.streams.remove(key));
      if (!removed) throw notFound(key);
      if (opts.json) printJson({ name: key, removed });
      else process.stdout.write(`removed stream ${key}\n`);
    });

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    streams
      .command(`${verb} <name>`)
      .description(`${verb} a stream`)
      .addOption(jsonOption())
      .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
        const stream = await withStore(cmd, async (store) => {
          await getStream(store, name);
          return store.streams.setEnabled(name, enabled);
        });
        if (opts.json) printJson(stream);
        else printStreams([stream]);
      });
  }
}

/** `a, b,,c` -> [a, b, c]; empty items are dropped so a trailing comma is harmless. */
function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Runs `fn`, renaming a ValidationError's field to the option it came from (`symbols[2]` -> `--symbols[2]`). */
function namingOptions<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    const m = /^([A-Za-z]+)(.*)$/.exec(err.field);
    const option = m?.[1] === undefined ? undefined : OPTION_OF[m[1]];
    if (option === undefined) throw err;
    throw new ValidationError(`${option}${m?.[2] ?? ''}`, err.expected, err.received);
  }
}

/** Streams of a venue run against its connector's base URL and budget, like its jobs. */
async function assertConnector(store: StateStore, spec: StreamSpec): Promise<void> {
  if (await store.connectors.get(spec.venue)) return;
  throw new ValidationError(
    '--venue',
    `a venue with a connector (create it with tickfleet connectors upsert ${spec.venue} --base-url <url> --limit <n>)`,
    spec.venue,
  );
}

async function getStream(store: StateStore, name: string): Promise<StreamDefinition> {
  const key = parseOrThrow(StreamName, name, 'stream name');
  const stream = await store.streams.get(key);
  if (!stream) throw notFound(key);
  return stream;
}

function notFound(name: string): ValidationError {
  return new ValidationError('stream', 'an existing stream (see tickfleet streams list)', name);
}

/** The definitions as `streams` and `status` print them. */
/** A definition with its symbols, or summarised to their count (as `status` has them). */
type StreamRow = Omit<StreamDefinition, 'symbols'> & ({ symbols: readonly string[] } | { symbolCount: number });

export function printStreams(list: readonly StreamRow[]): void {
  printTable(
    ['STREAM', 'VENUE', 'SYMBOLS', 'CHANNELS', 'BOOK DEPTH', 'ENABLED', 'VERSION', 'UPDATED'],
    list.map((s) => [
      s.name,
      s.venue,
      'symbols' in s ? s.symbols.length : s.symbolCount,
      s.channels.join(','),
      s.bookDepth,
      s.enabled ? 'yes' : 'no',
      s.version,
      isoOrDash(s.updatedAt),
    ]),
  );
}
