import { type Command } from 'commander';
import { DEFAULTS, envWith } from '@tickfleet/config';
import { ValidationError } from '@tickfleet/core';
import { integer } from '../args.js';
import { cliEnv } from '../cli-env.js';
import { fleetRedis } from '../fleet-context.js';
import { listenError } from '../edge-errors.js';
import { guardRole, roleGuardEnv } from '../role-guard.js';
import { storeUrl, withStore } from '../store-context.js';

interface DashboardOptions {
  port?: number;
  host?: string;
  allowActions?: boolean;
  spoolDir?: string;
}

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('serve bull-board for every venue queue and the fleet overview (env: REDIS_URL, TICKFLEET_DASHBOARD_*)')
    .option('--port <n>', `HTTP port (env TICKFLEET_DASHBOARD_PORT, default ${DEFAULTS.dashboardPort}; 0 = a free port)`, integer('--port'))
    .option('--host <host>', `address to listen on (env TICKFLEET_DASHBOARD_HOST, default ${DEFAULTS.listenHost})`)
    .option('--allow-actions', 'let bull-board retry, promote and clean units; needs TICKFLEET_DASHBOARD_TOKEN or _USER + _PASSWORD')
    .option('--spool-dir <dir>', `spool base directory for the spool depth (env TICKFLEET_SPOOL_DIR, default ${DEFAULTS.spoolDir})`)
    .action(async (opts: DashboardOptions, cmd: Command) => {
      if (opts.port !== undefined && (opts.port < 0 || opts.port > 65535)) throw new ValidationError('--port', 'a port 0..65535', opts.port);
      const { redisUrl, prefix } = fleetRedis();
      const guardEnv = roleGuardEnv();
      const { runDashboard } = await import('@tickfleet/dashboard');
      await withStore(cmd, async () => undefined);
      const dashboard = await runDashboard(
        envWith({
          REDIS_URL: redisUrl,
          TICKFLEET_PREFIX: cliEnv('TICKFLEET_PREFIX').TICKFLEET_PREFIX ?? prefix,
          TICKFLEET_STORE_URL: storeUrl(cmd),
          ...(opts.port !== undefined ? { TICKFLEET_DASHBOARD_PORT: String(opts.port) } : {}),
          ...(opts.host !== undefined ? { TICKFLEET_DASHBOARD_HOST: opts.host } : {}),
          ...(opts.allowActions ? { TICKFLEET_DASHBOARD_ALLOW_ACTIONS: '1' } : {}),
          ...(opts.spoolDir !== undefined ? { TICKFLEET_SPOOL_DIR: opts.spoolDir } : {}),
        }),
      ).catch((err: unknown) => {
        throw listenError(err, {
          port: opts.port !== undefined ? '--port' : 'TICKFLEET_DASHBOARD_PORT',
          host: opts.host !== undefined ? '--host' : 'TICKFLEET_DASHBOARD_HOST',
        });
      });
      // One line a person (or a test) can read the address from; the logs are JSON.
      process.stdout.write(`dashboard listening on ${dashboard.url}\n`);
      await guardRole('dashboard', redisUrl, guardEnv);
    });
}
