import type { Command } from 'commander';
import { registerSpool } from './spool.js';
import { registerGaps } from './gaps.js';
import { registerData } from './data.js';
import { registerConnectors } from './connectors.js';
import { registerJobs } from './jobs.js';
import { registerBackfill } from './backfill.js';
import { registerWorker } from './worker.js';
import { registerUp } from './up.js';
import { registerMockVenue } from './mock-venue.js';
import { registerScheduler } from './scheduler.js';
import { registerDashboard } from './dashboard.js';
import { registerStatus } from './status.js';
import { registerQueues } from './queues.js';
import { registerUnits } from './units.js';

/**
 * Every command group registers itself here, one file per group under `commands/`.
 * Each entry is `register<Group>(program)`.
 */
export function registerCommands(program: Command): void {
  registerSpool(program);
  registerGaps(program);
  registerData(program);
  registerConnectors(program);
  registerJobs(program);
  registerBackfill(program);
  registerWorker(program);
  registerUp(program);
  registerMockVenue(program);
  registerScheduler(program);
  registerDashboard(program);
  registerStatus(program);
  registerQueues(program);
  registerUnits(program);
}
