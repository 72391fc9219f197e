import { type Command } from 'commander';
import { formatDurationMs } from '@tickfleet/core';
import type { BookLoopStatus, FleetStatus, StreamStatus, VenueStatus } from '@tickfleet/dashboard';
import { cliEnv } from '../cli-env.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';
import { withFleetRedis } from './queues.js';
import { printStreams } from './streams.js';

const dur = (ms: number | null): string => (ms === null ? '-' : formatDurationMs(ms));

function budgetCell(v: VenueStatus): string {
  if (!v.budget) return '-';
  return `${Math.round(v.budget.used)}/${v.budget.limit}`;
}

function freezeCell(v: VenueStatus): string {
  return v.freeze ? `${v.freeze.cause} ${formatDurationMs(v.freeze.remainingMs)}` : '-';
}

/** `connection 12s ago`: the cause of the venue's last failed unit and how long ago it failed. */
function lastErrorCell(v: VenueStatus, atMs: number): string {
  const e = v.health.lastError;
  return e ? `${e.cause} ${formatDurationMs(Math.max(0, atMs - e.atMs))} ago` : '-';
}

/** `12/14`: the connector's enabled jobs of all its jobs. */
function jobsCell(v: VenueStatus): string {
  return `${v.activeJobsCount}/${v.jobsCount}`;
}

/** One line per venue that is failing or degraded: why, and its last error's message. */
function printHealthNotes(status: FleetStatus): void {
  const troubled = status.venues.filter((v) => v.health.state === 'failing' || v.health.state === 'degraded');
  for (const v of troubled) {
    const e = v.health.lastError;
    const last = e ? `; last error ${lastErrorCell(v, status.atMs)} (${new Date(e.atMs).toISOString()}): ${e.message}` : '';
    process.stdout.write(`${v.venue} ${v.health.state}: ${v.health.reason}${last}\n`);
  }
}

function printStatus(status: FleetStatus): void {
  printTable(
    [
      'VENUE',
      'STATE',
      'BUDGET',
      'FREEZE',
      'CONC/CAP',
      'WAITING',
      'ACTIVE',
      'DELAYED',
      'FAILED',
      'RUNNABLE',
      'BLOCKED',
      'CURSOR LAG',
      'GAPS',
      'JOBS',
      'LAST RUN',
      'WORKERS',
      'HEALTH',
      'LAST ERROR',
    ],
    status.venues.map((v) => [
      v.venue,
      v.status,
      budgetCell(v),
      freezeCell(v),
      `${v.concurrency.current}/${v.maxInflight}`,
      v.queue.waiting + v.queue.prioritized,
      v.queue.active,
      v.queue.delayed,
      v.queue.failed,
      v.runnable,
      v.blocked,
      dur(v.cursorLag.maxMs),
      v.openGaps,
      jobsCell(v),
      v.lastJobRunAt === null ? '-' : `${formatDurationMs(Math.max(0, status.atMs - v.lastJobRunAt))} ago`,
      v.liveWorkers,
      v.health.state,
      lastErrorCell(v, status.atMs),
    ]),
  );
  printHealthNotes(status);
  if (status.spool) process.stdout.write(`spool ${status.spool.dir}: ${status.spool.segments} segments, ${status.spool.bytes} bytes\n`);
}

/**
 * Jobs held by a scheduler lease, per venue: claimed, their unit not ended yet, so not claimed
 * again before the latest lease ends. Under the venue table, only venues holding any.
 */
function printLeases(status: FleetStatus): void {
  const rows = status.venues.filter((v) => v.leases.jobs > 0);
  if (rows.length === 0) return;
  process.stdout.write('\njobs held by a scheduler lease (claimed, unit not ended)\n');
  printTable(
    ['VENUE', 'JOBS', 'LATEST LEASE ENDS'],
    rows.map((v) => [v.venue, v.leases.jobs, `${isoOrDash(v.leases.untilMs)} (in ${dur(Math.max(0, (v.leases.untilMs ?? status.atMs) - status.atMs))})`]),
  );
}

/** Holder and live state of the streams someone holds or published lately: a second table under the definitions. */
function printStreamHolders(list: readonly StreamStatus[]): void {
  const rows = list.filter((s) => s.holder || s.live);
  if (rows.length === 0) return;
  const n = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : String(v));
  process.stdout.write('\nstream holders\n');
  printTable(
    ['STREAM', 'HOLDER', 'TOKEN', 'STATE', 'MESSAGES', 'RECONNECTS', 'GAPS FOUND/HEALED/UNHEALED', 'RESYNCS', 'LAST MSG MS', 'SKEW P50/P99 MS', 'LEDGER GAPS'],
    rows.map(({ name, holder, live: l, unhealedGaps }) => [
      name,
      holder?.worker ?? '-',
      holder?.token ?? '-',
      l?.state ?? '-',
      n(l?.messages),
      n(l?.reconnects),
      `${n(l?.gapsFound)}/${n(l?.gapsHealed)}/${n(l?.gapsUnhealed)}`,
      n(l?.resyncs),
      n(l?.lastMessageAgeMs),
      `${n(l?.timeQuality.skewP50Ms)}/${n(l?.timeQuality.skewP99Ms)}`,
      unhealedGaps,
    ]),
  );
}

/** One row per holder of each venue's book loop: its shares, the achieved cadence (snapshot ages) and what it spends. */
function printBookLoops(loops: readonly BookLoopStatus[]): void {
  if (loops.length === 0) return;
  const n = (v: number | null, digits = 0): string => (v === null ? '-' : v.toFixed(digits));
  process.stdout.write("\nbook loops (achieved cadence: age of each instrument's newest snapshot)\n");
  printTable(
    ['VENUE', 'CADENCE', 'HOLDER', 'SHARES', 'INSTRUMENTS', 'AGE P50/P95 MS', 'BOOKS/S', 'UNCHANGED/S', 'REQUESTS/S', 'BUDGET/S'],
    loops.flatMap((l) => [
      ...l.holders.map((h) => {
        const r = h.report;
        const per = (x: number | undefined): string => (r && r.intervalMs > 0 && x !== undefined ? ((x * 1000) / r.intervalMs).toFixed(1) : '-');
        return [
          l.venue,
          dur(l.cadenceMs),
          h.workerId,
          `${h.shares.join(',')} of ${l.shares}`,
          r?.instruments ?? '-',
          `${n(r?.p50AgeMs ?? null)}/${n(r?.p95AgeMs ?? null)}`,
          per(r?.books),
          per(r?.unchanged),
          per(r?.requests),
          per(r?.weight),
        ];
      }),
      [
        l.venue,
        dur(l.cadenceMs),
        l.unheld.length > 0 ? `(unheld: ${l.unheld.join(',')})` : '(all)',
        `${l.shares - l.unheld.length} of ${l.shares}`,
        '-',
        `${n(l.p50AgeMs)}/${n(l.p95AgeMs)}`,
        l.booksPerS.toFixed(1),
        l.unchangedPerS.toFixed(1),
        l.requestsPerS.toFixed(1),
        l.weightPerS.toFixed(1),
      ],
    ]),
  );
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'fleet status per venue: state, budget, freeze, AIMD concurrency, queue depth, cursor lag, jobs (enabled/all) and last run, health and last error; the streams: definitions, holders and live state (env: REDIS_URL)',
    )
    .option('--spool-dir <dir>', 'spool base directory', cliEnv('TICKFLEET_SPOOL_DIR').TICKFLEET_SPOOL_DIR)
    .addOption(jsonOption('print the full status as JSON'))
    .action(async (opts: { json?: boolean; spoolDir: string }, cmd: Command) => {
      const [{ FleetVenueControl, openBudgets, WorkerHeartbeat }, { collectFleetStatus }] = await Promise.all([
        import('@tickfleet/budget'),
        import('@tickfleet/dashboard'),
      ]);
      const status = await withStore(cmd, (stateStore) =>
        withFleetRedis(async ({ redis, prefix, queues }) => {
          // Budget figures from where the workers budget: the store, or TICKFLEET_BUDGET_URL's Redis.
          const budgets = await openBudgets(cliEnv('TICKFLEET_BUDGET_URL').TICKFLEET_BUDGET_URL, stateStore, { prefix });
          try {
            return await collectFleetStatus({
              store: budgets.store,
              queues,
              control: new FleetVenueControl(redis, { prefix }),
              liveness: new WorkerHeartbeat(redis, 'cli', { prefix }),
              spoolDir: opts.spoolDir,
              // The streams with their holders (leases) and what each holder last published.
              streams: { redis, prefix },
            });
          } finally {
            await budgets.close();
          }
        }),
      );
      if (opts.json) return printJson(status);
      printStatus(status);
      printLeases(status);
      printBookLoops(status.bookLoops ?? []);
      const streams = status.streams ?? [];
      if (streams.length > 0) {
        process.stdout.write('\nstreams\n');
        printStreams(streams);
        printStreamHolders(streams);
      }
    });
}
