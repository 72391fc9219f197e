import { type Command } from 'commander';
import { formatDurationMs, type StreamDefinition } from '@tickfleet/core';
import type { FleetStatus, VenueStatus } from '@tickfleet/dashboard';
import { cliEnv } from '../cli-env.js';
import { jsonOption, printJson, printTable } from '../output.js';
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

function printStatus(status: FleetStatus): void {
  printTable(
    ['VENUE', 'STATE', 'BUDGET', 'FREEZE', 'CONC/CAP', 'WAITING', 'ACTIVE', 'DELAYED', 'FAILED', 'RUNNABLE', 'BLOCKED', 'CURSOR LAG', 'GAPS', 'WORKERS'],
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
      v.liveWorkers,
    ]),
  );
  if (status.spool) process.stdout.write(`spool ${status.spool.dir}: ${status.spool.segments} segments, ${status.spool.bytes} bytes\n`);
}

/** A stream in `status --json`: its definition without the symbol list (up to 1024 pairs; `streams show` has it). */
function streamSummary(s: StreamDefinition): Omit<StreamDefinition, 'symbols'> & { symbolCount: number } {
  const { symbols, ...rest } = s;
  return { ...rest, symbolCount: symbols.length };
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('fleet status per venue: state, budget, freeze, AIMD concurrency, queue depth, cursor lag; the stream definitions (env: REDIS_URL)')
    .option('--spool-dir <dir>', 'spool base directory', cliEnv('TICKFLEET_SPOOL_DIR').TICKFLEET_SPOOL_DIR)
    .addOption(jsonOption('print the full status as JSON'))
    .action(async (opts: { json?: boolean; spoolDir: string }, cmd: Command) => {
      const [{ FleetVenueControl, openBudgets, WorkerHeartbeat }, { collectFleetStatus }] = await Promise.all([
        import('@tickfleet/budget'),
        import('@tickfleet/dashboard'),
      ]);
      const { status, streams } = await withStore(cmd, async (stateStore) => ({
        streams: await stateStore.streams.list(),
        status: await withFleetRedis(async ({ redis, prefix, queues }) => {
          // Budget figures from where the workers budget: the store, or TICKFLEET_BUDGET_URL's Redis.
          const budgets = await openBudgets(cliEnv('TICKFLEET_BUDGET_URL').TICKFLEET_BUDGET_URL, stateStore, { prefix });
          try {
            return await collectFleetStatus({
              store: budgets.store,
              queues,
              control: new FleetVenueControl(redis, { prefix }),
              liveness: new WorkerHeartbeat(redis, 'cli', { prefix }),
              spoolDir: opts.spoolDir,
            });
          } finally {
            await budgets.close();
          }
        }),
      }));
      if (opts.json) return printJson({ ...status, streams: streams.map(streamSummary) });
      printStatus(status);
      // The definitions only: which worker holds each stream is the workers' to report.
      if (streams.length > 0) {
        process.stdout.write('\nstreams\n');
        printStreams(streams);
      }
    });
}
