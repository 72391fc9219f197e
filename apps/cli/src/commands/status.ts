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

/** Holder and live state of the streams someone holds or published lately: a second table under the definitions. */
function printStreamHolders(list: Array<{ name: string; holder: { worker: string; token: number } | null; live: Record<string, unknown> | null }>): void {
  const rows = list.filter((s) => s.holder || s.live);
  if (rows.length === 0) return;
  const n = (v: unknown): string => (typeof v === 'number' ? String(v) : '-');
  const tq = (l: Record<string, unknown> | null): { skewP50Ms?: unknown; skewP99Ms?: unknown } =>
    (l?.timeQuality as { skewP50Ms?: unknown; skewP99Ms?: unknown }) ?? {};
  process.stdout.write('\nstream holders\n');
  printTable(
    ['STREAM', 'HOLDER', 'TOKEN', 'STATE', 'MESSAGES', 'RECONNECTS', 'GAPS FOUND/HEALED/UNHEALED', 'RESYNCS', 'LAST MSG MS', 'SKEW P50/P99 MS'],
    rows.map(({ name, holder, live: l }) => [
      name,
      holder?.worker ?? '-',
      holder?.token ?? '-',
      typeof l?.state === 'string' ? l.state : '-',
      n(l?.messages),
      n(l?.reconnects),
      `${n(l?.gapsFound)}/${n(l?.gapsHealed)}/${n(l?.gapsUnhealed)}`,
      n(l?.resyncs),
      n(l?.lastMessageAgeMs),
      `${n(tq(l).skewP50Ms)}/${n(tq(l).skewP99Ms)}`,
    ]),
  );
}

/** A stream in `status --json`: its definition without the symbol list (up to 1024 pairs; `streams show` has it). */
function streamSummary(s: StreamDefinition): Omit<StreamDefinition, 'symbols'> & { symbolCount: number } {
  const { symbols, ...rest } = s;
  return { ...rest, symbolCount: symbols.length };
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'fleet status per venue: state, budget, freeze, AIMD concurrency, queue depth, cursor lag; the streams: definitions, holders and live state (env: REDIS_URL)',
    )
    .option('--spool-dir <dir>', 'spool base directory', cliEnv('TICKFLEET_SPOOL_DIR').TICKFLEET_SPOOL_DIR)
    .addOption(jsonOption('print the full status as JSON'))
    .action(async (opts: { json?: boolean; spoolDir: string }, cmd: Command) => {
      const [{ FleetVenueControl, openBudgets, WorkerHeartbeat }, { collectFleetStatus }] = await Promise.all([
        import('@tickfleet/budget'),
        import('@tickfleet/dashboard'),
      ]);
      const { StreamLeases, readStreamLive } = await import('@tickfleet/queues');
      const { status, streams, holders, live } = await withStore(cmd, async (stateStore) => {
        const streams = await stateStore.streams.list();
        return withFleetRedis(async ({ redis, prefix, queues }) => {
          // Budget figures from where the workers budget: the store, or TICKFLEET_BUDGET_URL's Redis.
          const budgets = await openBudgets(cliEnv('TICKFLEET_BUDGET_URL').TICKFLEET_BUDGET_URL, stateStore, { prefix });
          try {
            return {
              streams,
              status: await collectFleetStatus({
                store: budgets.store,
                queues,
                control: new FleetVenueControl(redis, { prefix }),
                liveness: new WorkerHeartbeat(redis, 'cli', { prefix }),
                spoolDir: opts.spoolDir,
              }),
              // Who holds each stream (its lease) and what the holder last published about it.
              holders: await new StreamLeases(redis, 'cli', { prefix }).holders(),
              live: await readStreamLive(
                redis,
                prefix,
                streams.map((s) => s.name),
              ),
            };
          } finally {
            await budgets.close();
          }
        });
      });
      const held = streams.map((s) => ({ ...streamSummary(s), holder: holders.get(s.name) ?? null, live: live.get(s.name) ?? null }));
      if (opts.json) return printJson({ ...status, streams: held });
      printStatus(status);
      if (streams.length > 0) {
        process.stdout.write('\nstreams\n');
        printStreams(streams);
        printStreamHolders(held);
      }
    });
}
