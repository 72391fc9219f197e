import { type Command } from 'commander';
import { MAX_UNIVERSE_SYMBOLS, parseOrThrow, type Universe, universeKey, UniverseName, ValidationError, VenueName } from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';
import { readLinesBounded } from '../internal/read-lines-bounded.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';

/** A symbol file larger than this is not a symbol list (5,000 symbols of up to 128 characters fit well below). */
const MAX_SYMBOL_FILE_BYTES = 1024 * 1024;

export function registerUniverses(program: Command): void {
  const universes = program
    .command('universes')
    .description(`named symbol lists per venue (<venue>/<name>, up to ${MAX_UNIVERSE_SYMBOLS} symbols); a job with symbol @<name> covers one`);

  universes
    .command('set <venue> <name> [symbols...]')
    .description('create a universe or replace its members; units of jobs over it collect the new members from their next run')
    .option('--file <path>', 'read the symbols from a file, one per line (blank lines and # comments ignored)')
    .addOption(jsonOption('print the universe as JSON'))
    .action(async (venue: string, name: string, symbols: string[], opts: { file?: string; json?: boolean }, cmd: Command) => {
      const key = parseKey(venue, name);
      const all = opts.file === undefined ? symbols : withFileSymbols(symbols, opts.file);
      if (all.length === 0) throw new ValidationError('symbols', 'at least one symbol, as arguments or with --file <path>');
      const universe = await withStore(cmd, async (store) => {
        await assertKnownVenue(store, key.venue);
        return store.universes.set(key.venue, key.name, all);
      });
      if (opts.json) printJson(universe);
      else process.stdout.write(`${universeKey(universe.venue, universe.name)}: ${universe.symbols.length} symbols\n`);
    });

  universes
    .command('list')
    .description('list universes')
    .option('--venue <venue>', 'only this venue')
    .addOption(jsonOption())
    .action(async (opts: { venue?: string; json?: boolean }, cmd: Command) => {
      const venue = opts.venue === undefined ? undefined : parseOrThrow(VenueName, opts.venue, '--venue');
      const list = await withStore(cmd, (store) => store.universes.list(venue));
      if (opts.json) printJson(list);
      else printUniverses(list);
    });

  universes
    .command('show <venue> <name>')
    .description('show one universe and its members')
    .addOption(jsonOption())
    .action(async (venue: string, name: string, opts: { json?: boolean }, cmd: Command) => {
      const key = parseKey(venue, name);
      const universe = await withStore(cmd, (store) => store.universes.get(key.venue, key.name));
      if (!universe) throw new ValidationError('universe', 'an existing universe (see tickfleet universes list)', universeKey(key.venue, key.name));
      if (opts.json) printJson(universe);
      else {
        printUniverses([universe]);
        process.stdout.write(`${universe.symbols.join('\n')}\n`);
      }
    });

  universes
    .command('remove <venue> <name>')
    .description('remove a universe no enabled job refers to')
    .addOption(jsonOption())
    .action(async (venue: string, name: string, opts: { json?: boolean }, cmd: Command) => {
      const key = parseKey(venue, name);
      const removed = await withStore(cmd, async (store) => {
        // An enabled job over a removed universe would fail every run; the operator disables it
        // first (a disabled one that is enabled again fails naming the universe).
        const users = (await store.jobs.list({ venue: key.venue, enabled: true })).filter((j) => j.symbol === `@${key.name}`);
        if (users.length > 0) {
          throw new ValidationError(
            'universe',
            `a universe no enabled job refers to (disable first: ${users.map((j) => j.id).join(', ')})`,
            universeKey(key.venue, key.name),
          );
        }
        return store.universes.remove(key.venue, key.name);
      });
      if (!removed) throw new ValidationError('universe', 'an existing universe (see tickfleet universes list)', universeKey(key.venue, key.name));
      if (opts.json) printJson({ venue: key.venue, name: key.name, removed });
      else process.stdout.write(`removed ${universeKey(key.venue, key.name)}\n`);
    });
}

function parseKey(venue: string, name: string): { venue: string; name: string } {
  return { venue: parseOrThrow(VenueName, venue, 'venue'), name: parseOrThrow(UniverseName, name, 'universe name') };
}

/**
 * The arguments' symbols, then the file's, one per line (blank lines and `#` comments skipped).
 * Both bounds hold while reading: at most MAX_SYMBOL_FILE_BYTES read, and the read stops at the
 * first distinct symbol past MAX_UNIVERSE_SYMBOLS (arguments included).
 */
function withFileSymbols(args: readonly string[], path: string): string[] {
  const all = [...args];
  const distinct = new Set(args.map((a) => a.trim()));
  readLinesBounded(path, { argName: '--file', what: 'a symbol file', maxBytes: MAX_SYMBOL_FILE_BYTES }, (line) => {
    const symbol = line.replace(/#.*/, '').trim();
    if (symbol === '') return;
    all.push(symbol);
    distinct.add(symbol);
    if (distinct.size > MAX_UNIVERSE_SYMBOLS)
      throw new ValidationError('--file', `at most ${MAX_UNIVERSE_SYMBOLS} distinct symbols per universe, arguments included`, path);
  });
  return all;
}

/**
 * A universe serves jobs of a venue tickfleet collects from: one with an adapter, or one an
 * operator gave a connector. Any other name (a typo, a venue with no adapter) is refused naming them.
 */
async function assertKnownVenue(store: StateStore, venue: string): Promise<void> {
  const { ADAPTER_VENUES } = await import('@tickfleet/venues');
  const known = new Set<string>([...ADAPTER_VENUES, ...(await store.connectors.list()).map((c) => c.venue)]);
  if (!known.has(venue)) throw new ValidationError('venue', `a venue with an adapter or a connector (${[...known].sort().join(', ')})`, venue);
}

function printUniverses(list: Universe[]): void {
  printTable(
    ['UNIVERSE', 'SYMBOLS', 'FIRST', 'UPDATED'],
    list.map((u) => [
      universeKey(u.venue, u.name),
      u.symbols.length,
      u.symbols.slice(0, 5).join(' ') + (u.symbols.length > 5 ? ' …' : ''),
      isoOrDash(u.updatedAt),
    ]),
  );
}
