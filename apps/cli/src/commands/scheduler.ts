import type { Command } from 'commander';
import { duration, integer } from '../args.js';
import { storeUrl } from '../store-context.js';

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
      const env: Record<string, string | undefined> = { ...process.env, TICKFLEET_STORE_URL: storeUrl(cmd) };
      if (opts.tick !== undefined) env.TICKFLEET_SCHEDULER_TICK_MS = String(opts.tick);
      if (opts.port !== undefined) env.TICKFLEET_HEALTH_PORT = String(opts.port);
      if (opts.redis !== undefined) env.REDIS_URL = opts.redis;
      // Keeps running after this returns (health server and tick timer hold the process);
      // the SIGTERM/SIGINT handlers installed by runScheduler stop it and exit 0.
      const { runScheduler } = await import('@tickfleet/scheduler');
      await runScheduler(env);
    });
}
