import { type Command } from 'commander';
import { formatDurationMs, parseOrThrow, ValidationError, VenueName } from '@tickfleet/core';
import type { UnitProgress } from '@tickfleet/worker';
import { duration, positiveInt } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';
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

/** One unit a worker is running now, as `units active` shows it. */
interface ActiveUnit {
  venue: string;
  unitId: string;
  kind: string;
  jobId: string;
  /** When its worker took it (epoch ms). */
  startedAt: number | null;
  attempt: number;
  /** What the unit published of its progress (daily files: files of the day's listing, bytes, records); null when none. */
  progress: UnitProgress | null;
}

/** Active units listed per venue at most (a venue's cap is rarely above it). */
const ACTIVE_LISTED = 200;

interface CleanOptions {
  olderThan?: number;
  state: Cleanable[];
  limit?: number;
  json?: boolean;
}

export function registerUnits(program: Command): void {
  const units = program.command('units').description('list the running units and act on the units in a venue queue (env: REDIS_URL)');

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
    .command('active [venue]')
    .description(
      "units running now (every connector's, or the venue's): kind, job, start and progress; a daily-files unit shows files of the day done of listed, bytes and records so far",
    )
    .addOption(jsonOption())
    .action(async (venueArg: string | undefined, opts: { json?: boolean }, cmd: Command) => {
      const venues =
        venueArg === undefined
          ? await withStore(cmd, async (store) => (await store.connectors.list()).map((c) => c.venue).sort())
          : [parseOrThrow(VenueName, venueArg, 'venue')];
      const rows = await withFleetRedis(async ({ queues }) => {
        const out: ActiveUnit[] = [];
        for (const venue of venues) {
          for (const unit of await queues.queue(venue).getJobs(['active'], 0, ACTIVE_LISTED - 1, true)) {
            out.push({
              venue,
              unitId: unit.id ?? '-',
              kind: unit.data.kind,
              jobId: unit.data.jobId,
              startedAt: unit.processedOn ?? null,
              attempt: unit.attemptsMade + 1,
              progress: unitProgress(unit.progress),
            });
          }
        }
        return out;
      });
      if (opts.json) return printJson(rows);
      const now = Date.now();
      printTable(
        ['VENUE', 'UNIT', 'KIND', 'JOB', 'STARTED', 'RUNNING', 'PROGRESS'],
        rows.map((r) => [
          r.venue,
          r.unitId,
          r.kind,
          r.jobId,
          isoOrDash(r.startedAt),
          r.startedAt === null ? '-' : formatDurationMs(Math.max(0, now - r.startedAt)),
          r.progress ? `${r.progress.files}/${r.progress.filesTotal} files, ${r.progress.bytes} bytes, ${r.progress.records} records` : '-',
        ]),
      );
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

/** A unit's BullMQ progress as a daily-files unit publishes it, or null (none yet, or another shape). */
function unitProgress(value: unknown): UnitProgress | null {
  if (typeof value !== 'object' || value === null) return null;
  const p = value as Record<string, unknown>;
  const n = (key: string): number | null => (typeof p[key] === 'number' && Number.isFinite(p[key]) ? p[key] : null);
  const files = n('files');
  const filesTotal = n('filesTotal');
  if (files === null || filesTotal === null) return null;
  return { files, filesTotal, bytes: n('bytes') ?? 0, records: n('records') ?? 0 };
}
