import { type Command } from 'commander';
import { parseOrThrow, ValidationError, VenueName } from '@tickfleet/core';
import { duration, positiveInt } from '../args.js';
import { jsonOption, printJson, printTable } from '../output.js';
import { withFleetRedis } from './queues.js';

/** Unit states `units clean` may remove. Active units are never cleaned: a worker holds them. */
const CLEANABLE = ['completed', 'failed', 'delayed', 'wait', 'prioritized'] as const;
type Cleanable = (typeof CLEANABLE)[number];

function states(value: string): Cleanable[] {
  const list = value.split(',').map((s) => s.trim());
  for (const s of list) {
    if (!(CLEANABLE as readonly string[]).includes(s)) throw new ValidationError('--state', `comma-separated states from ${CLEANABLE.join(', ')}`, value);
  }
  return [...new Set(list)] as Cleanable[];
}

interface CleanOptions {
  olderThan?: number;
  state: Cleanable[];
  limit?: number;
  json?: boolean;
}

export function registerUnits(program: Command): void {
  const units = program.command('units').description('act on the units in a venue queue (env: REDIS_URL)');

  units
    .command('retry-failed <venue>')
    .description('move every failed unit of the venue back to its queue')
    .addOption(jsonOption())
    .action(async (venueArg: string, opts: { json?: boolean }) => {
      const venue = parseOrThrow(VenueName, venueArg, 'venue');
      const result = await withFleetRedis(async ({ queues }) => {
        const queue = queues.queue(venue);
        const failedBefore = (await queues.counts(venue)).failed;
        // Only units that failed before now: one failing again during the retry is not looped on.
        await queue.retryJobs({ state: 'failed', count: 1000, timestamp: Date.now() });
        const failedAfter = (await queues.counts(venue)).failed;
        return { venue, queue: queue.name, retried: Math.max(0, failedBefore - failedAfter), failedBefore, failedAfter };
      });
      if (opts.json) return printJson(result);
      printTable(['VENUE', 'RETRIED', 'FAILED BEFORE', 'FAILED NOW'], [[result.venue, result.retried, result.failedBefore, result.failedAfter]]);
    });

  units
    .command('clean <venue>')
    .description('remove finished units older than a duration (default states: completed, failed)')
    .option('--older-than <duration>', 'only units finished (or added, for waiting/delayed) longer ago than this, e.g. 1d, 12h', duration('--older-than'))
    .option('--state <list>', `comma-separated states to clean: ${CLEANABLE.join(', ')}`, states, ['completed', 'failed'] as Cleanable[])
    .option('--limit <n>', 'at most this many units per state (default: all)', positiveInt('--limit'))
    .addOption(jsonOption())
    .action(async (venueArg: string, opts: CleanOptions) => {
      const venue = parseOrThrow(VenueName, venueArg, 'venue');
      if (opts.olderThan === undefined) throw new ValidationError('--older-than', 'a duration such as 1d or 12h (units younger than it are kept)');
      const olderThanMs = opts.olderThan;
      const result = await withFleetRedis(async ({ queues }) => {
        const queue = queues.queue(venue);
        const removed: Record<string, number> = {};
        for (const state of opts.state) removed[state] = (await queue.clean(olderThanMs, opts.limit ?? 0, state)).length;
        return { venue, queue: queue.name, olderThanMs, removed, total: Object.values(removed).reduce((n, c) => n + c, 0) };
      });
      if (opts.json) return printJson(result);
      printTable(
        ['VENUE', 'STATE', 'REMOVED'],
        Object.entries(result.removed).map(([state, n]) => [result.venue, state, n]),
      );
    });
}
