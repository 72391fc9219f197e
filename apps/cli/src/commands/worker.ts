import { type Command } from 'commander';
import { DEFAULTS, envWith, parseConfig } from '@tickfleet/config';
import { parseOrThrow, ValidationError, VenueName } from '@tickfleet/core';
import { createLogger } from '@tickfleet/telemetry';
import { integer } from '../args.js';
import { cliEnv } from '../cli-env.js';
import { listenError, spoolDirError, storeOpenError } from '../edge-errors.js';
import { fleetRedis } from '../fleet-context.js';
import { guardRole, preflightRedis, roleGuardEnv } from '../role-guard.js';
import { storeUrl } from '../store-context.js';

interface WorkerOptions {
  venues?: string;
  port?: number;
  sink?: string;
  spoolDir?: string;
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: one BullMQ worker per served venue, sharing fleet-wide budgets (env: REDIS_URL, TICKFLEET_*)')
    .option('--venues <list>', 'comma-separated venues to serve (default: every connector)')
    .option('--port <n>', 'port of /metrics /healthz /readyz (default TICKFLEET_HEALTH_PORT or a free one)', integer('--port'))
    .option('--sink <url>', `sink URL (env TICKFLEET_SINK_URL, default ${DEFAULTS.sinkUrl})`)
    .option('--spool-dir <dir>', `spool base directory (env TICKFLEET_SPOOL_DIR, default ${DEFAULTS.spoolDir})`)
    .action(async (opts: WorkerOptions, cmd: Command) => {
      if (opts.venues !== undefined) {
        for (const v of opts.venues.split(',')) parseOrThrow(VenueName, v, '--venues');
      }
      if (opts.port !== undefined && (opts.port < 0 || opts.port > 65535)) throw new ValidationError('--port', 'a port 0..65535', opts.port);
      const { redisUrl, prefix } = fleetRedis();
      const guardEnv = roleGuardEnv();
      const env = envWith({
        REDIS_URL: redisUrl,
        TICKFLEET_PREFIX: cliEnv('TICKFLEET_PREFIX').TICKFLEET_PREFIX ?? prefix,
        TICKFLEET_STORE_URL: storeUrl(cmd),
        ...(opts.venues !== undefined ? { TICKFLEET_VENUES: opts.venues } : {}),
        ...(opts.port !== undefined ? { TICKFLEET_HEALTH_PORT: String(opts.port) } : {}),
        ...(opts.sink !== undefined ? { TICKFLEET_SINK_URL: opts.sink } : {}),
        ...(opts.spoolDir !== undefined ? { TICKFLEET_SPOOL_DIR: opts.spoolDir } : {}),
      });
      const { openStoreAtStart, runWorker, WorkerEnv } = await import('@tickfleet/worker');
      // Everything that can be checked is checked before anything runs: the environment, the
      // store (a MongoDB store that does not answer yet is waited for, as the worker does), and a
      // Redis that answers within a bounded wait.
      const config = parseConfig(WorkerEnv, env);
      const url = storeUrl(cmd);
      const store = await openStoreAtStart(url, createLogger({ role: 'worker', level: config.LOG_LEVEL })).catch((err: unknown) => {
        throw storeOpenError(url, err);
      });
      await store.close();
      await preflightRedis(redisUrl);
      try {
        await runWorker(env);
      } catch (err) {
        // The store was opened above, so a database error at start is the sink's.
        const sinkErr = storeOpenError(config.TICKFLEET_SINK_URL, err, opts.sink !== undefined ? '--sink' : 'TICKFLEET_SINK_URL');
        throw spoolDirError(
          listenError(sinkErr, { port: opts.port !== undefined ? '--port' : 'TICKFLEET_HEALTH_PORT', host: 'TICKFLEET_HEALTH_HOST' }),
          config.TICKFLEET_SPOOL_DIR,
        );
      }
      await guardRole('worker', redisUrl, guardEnv);
    });
}
