import type { Command } from 'commander';
import { envWith, parseConfig } from '@tickfleet/config';
import { duration, integer } from '../args.js';
import { listenError } from '../edge-errors.js';
import { guardRole, preflightRedis, roleGuardEnv } from '../role-guard.js';
import { storeUrl, withStore } from '../store-context.js';

interface SchedulerCliOptions {
  tick?: number;
  port?: number;
  redis?: string;
}

/** `tickfleet scheduler`: the scheduler role (leader election, claim due jobs, enqueue units). */
export function registerScheduler(program: Command): void {
  program
    .command('scheduler')
    .description('run a scheduler replica: leads through a Redis lock and enqueues due jobs as units')
    .option('--tick <duration>', 'time between ticks (env TICKFLEET_SCHEDULER_TICK_MS)', duration('--tick'))
    .option('--port <n>', 'port of /metrics /healthz /readyz (env TICKFLEET_HEALTH_PORT or PORT; 0 = any free port)', integer('--port'))
    .option('--redis <url>', 'Redis URL (env REDIS_URL)')
    .action(async (opts: SchedulerCliOptions, cmd: Command) => {
      const guardEnv = roleGuardEnv();
      const env = envWith({
        TICKFLEET_STORE_URL: storeUrl(cmd),
        ...(opts.tick !== undefined ? { TICKFLEET_SCHEDULER_TICK_MS: String(opts.tick) } : {}),
        ...(opts.port !== undefined ? { TICKFLEET_HEALTH_PORT: String(opts.port) } : {}),
        ...(opts.redis !== undefined ? { REDIS_URL: opts.redis } : {}),
      });
      const { SchedulerEnv, runScheduler } = await import('@tickfleet/scheduler');
      // Everything that can be checked is checked before anything runs: the environment, the
      // store, and a Redis that answers within a bounded wait.
      const config = parseConfig(SchedulerEnv, env);
      await withStore(cmd, async () => undefined);
      await preflightRedis(config.REDIS_URL);
      // Keeps running after this returns (health server and tick timer hold the process);
      // the SIGTERM/SIGINT handlers installed by runScheduler stop it and exit 0.
      try {
        await runScheduler(env);
      } catch (err) {
        throw listenError(err, { port: opts.port !== undefined ? '--port' : 'TICKFLEET_HEALTH_PORT', host: 'TICKFLEET_HEALTH_HOST' });
      }
      await guardRole('scheduler', config.REDIS_URL, guardEnv);
    });
}
