import type { Command } from 'commander';
import { registerUp } from './up.js';
import { registerScheduler } from './scheduler.js';
import { registerWorker } from './worker.js';
import { registerDashboard } from './dashboard.js';
import { registerMockVenue } from './mock-venue.js';
import { registerConnectors } from './connectors.js';
import { registerJobs } from './jobs.js';
import { registerUniverses } from './universes.js';
import { registerStreams } from './streams.js';
import { registerBackfill } from './backfill.js';
import { registerStatus } from './status.js';
import { registerQueues } from './queues.js';
import { registerUnits } from './units.js';
import { registerGaps } from './gaps.js';
import { registerData } from './data.js';
import { registerSpool } from './spool.js';

/**
 * Every command group registers itself here, one file per group under `commands/`, in the order
 * `tickfleet --help` lists them: roles first, then operator commands.
 *
 * A command with subcommands declares no options and no action of its own: commander lets a
 * command claim its options anywhere on the line, its subcommands' part included, so a group's
 * `--json` would take its subcommand's. What the group itself does is its default subcommand
 * (`backfill start`, `gaps list`). Only the root has options (`--store`), global on purpose, and
 * no command reuses their names. apps/cli/test/json-output.int.test.ts checks both.
 */
export function registerCommands(program: Command): void {
  registerUp(program);
  registerScheduler(program);
  registerWorker(program);
  registerDashboard(program);
  registerMockVenue(program);
  registerConnectors(program);
  registerJobs(program);
  registerUniverses(program);
  registerStreams(program);
  registerBackfill(program);
  registerStatus(program);
  registerQueues(program);
  registerUnits(program);
  registerGaps(program);
  registerData(program);
  registerSpool(program);
}
