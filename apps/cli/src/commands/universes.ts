import { readFileSync, statSync } from 'node:fs';
import { type Command } from 'commander';
import { MAX_UNIVERSE_SYMBOLS, parseOrThrow, type Universe, universeKey, UniverseName, ValidationError, VenueName } from '@tickfleet/core';
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
      const all = [...symbols, ...(opts.file === undefined ? [] : readSymbolFile(opts.file))];
      if (all.length === 0) throw new ValidationError('symbols', 'at least one symbol, as arguments or with --file <path>');
      const universe = await withStore(cmd, (store) => store.universes.set(key.venue, key.name, all));
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
    .description('remove a universe no job refers to')
    .addOption(jsonOption())
    .action(async (venue: string, name: string, opts: { json?: boolean }, cmd: Command) => {
      const key = parseKey(venue, name);
      const removed = await withStore(cmd, async (store) => {
        // A job over a removed universe would fail every run; the operator removes the jobs first.
        const users = (await store.jobs.list({ venue: key.venue })).filter((j) => j.symbol === `@${key.name}`);
        if (users.length > 0) {
          throw new ValidationError(
            'universe',
            `a universe no job refers to (remove or disable first: ${users.map((j) => j.id).join(', ')})`,
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

/** The file's symbols, one per line; blank lines and `#` comments are skipped. */
function readSymbolFile(path: string): string[] {
  let text: string;
  try {
    if (statSync(path).size > MAX_SYMBOL_FILE_BYTES) throw new ValidationError('--file', `a symbol file of at most ${MAX_SYMBOL_FILE_BYTES} bytes`, path);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw new ValidationError('--file', `a readable file of symbols, one per line (${(err as Error).message})`, path);
  }
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '');
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
