import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command } from 'commander';
import { DEFAULTS, envWith, type Env } from '@tickfleet/config';
import { ValidationError } from '@tickfleet/core';
import { createLogger } from '@tickfleet/telemetry';
import { integer, positiveInt } from '../args.js';
import { cliEnv } from '../cli-env.js';
import { DEMO_KEYS, DEMO_SCENARIO, demoStreamEnv, seedDemo } from '../demo-seed.js';
import { FLEET_FILE, readFleetInfo, type FleetInfo } from '../fleet-context.js';
import { FleetLock, FleetRunningError } from '../fleet-lock.js';
import { ROLE_LOG_DEFAULTS, RoleLogs } from '../role-logs.js';
import { PARENT_PID_ENV } from '../role-guard.js';
import { freePort } from '@tickfleet/queues';
import { startEmbeddedRedis, type EmbeddedRedis } from '../embedded-redis.js';
import { checkPrometheusAvailable, prometheusPort, startFleetPrometheus } from '../demo-prometheus.js';
import { storeUrl, withStore } from '../store-context.js';

interface UpOptions {
  demo?: boolean;
  workers: number;
  dashboardPort: number;
  sink?: string;
  prometheus?: true | number;
  logMaxBytes: number;
}

const CLI_ENTRY = fileURLToPath(new URL('../../bin/tickfleet.mjs', import.meta.url));
const WATCHDOG = fileURLToPath(new URL('../internal/fleet-watchdog.mjs', import.meta.url));
const LOG_DIR = '.tickfleet/logs';

export function registerUp(program: Command): void {
  program
    .command('up')
    .description('run the whole fleet on this machine: Redis (private unless REDIS_URL), scheduler, workers, dashboard')
    .option('--demo', 'also start the venue emulations (synthetic data) and seed connectors, jobs and streams, so data flows within seconds')
    .option('--workers <n>', 'worker processes', positiveInt('--workers'), 2)
    .option('--dashboard-port <n>', 'dashboard port (0: a free one)', integer('--dashboard-port'), DEFAULTS.dashboardPort)
    .option('--sink <url>', `sink URL (env TICKFLEET_SINK_URL, default ${DEFAULTS.sinkUrl})`)
    .option(
      '--prometheus [port]',
      'also run Prometheus (apt install prometheus) scraping every role, with the alert rules (port 9090 or a free one)',
      prometheusPort,
    )
    .option(
      '--log-max-bytes <n>',
      `rotate a role's log in ${LOG_DIR} past this size, keeping ${ROLE_LOG_DEFAULTS.keep} older files`,
      positiveInt('--log-max-bytes'),
      ROLE_LOG_DEFAULTS.maxBytes,
    )
    .action(async (opts: UpOptions, cmd: Command) => {
      if (opts.workers > 32) throw new ValidationError('--workers', 'at most 32 worker processes on one machine', opts.workers);
      if (opts.prometheus !== undefined) checkPrometheusAvailable();
      await runUp(opts, cmd);
    });
}

async function runUp(opts: UpOptions, cmd: Command): Promise<void> {
  const config = cliEnv(
    'TICKFLEET_PREFIX',
    'REDIS_URL',
    'TICKFLEET_SINK_URL',
    'LOG_LEVEL',
    'POLYGON_API_KEY',
    'FINNHUB_API_KEY',
    'FRED_API_KEY',
    'ALPACA_API_KEY_ID',
    'ALPACA_API_SECRET_KEY',
  );
  const logger = createLogger({ role: 'up', level: config.LOG_LEVEL });
  const store = storeUrl(cmd);
  const sink = opts.sink ?? config.TICKFLEET_SINK_URL;
  const prefix = config.TICKFLEET_PREFIX ?? DEFAULTS.prefix;
  // One `up` per directory, refused before anything is started or written: a second one would
  // share the store, sink and logs, and take fleet.json from the first.
  mkdirSync(LOG_DIR, { recursive: true });
  const lock = await FleetLock.acquire();
  if (!(lock instanceof FleetLock)) {
    const running = readFleetInfo();
    throw new FleetRunningError(lock, running?.pid === lock.pid ? running.dashboardUrl : undefined);
  }
  const logs = new RoleLogs(LOG_DIR, { maxBytes: opts.logMaxBytes });
  logs.startRun();
  logs.start();

  const cleanups: Array<() => Promise<void>> = [];
  const children: ChildProcess[] = [];
  // Started before anything else: if this process is killed outright (SIGKILL), the watchdog
  // stops every process it started, so nothing of the fleet lingers.
  const watchdog = spawn(process.execPath, [WATCHDOG], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], detached: true });
  const tellWatchdog = (msg: { type: 'group' | 'last' | 'done'; pid?: number }): void => {
    if (watchdog.connected) watchdog.send(msg);
  };
  let stopping = false;
  const stopAll = async (code: number): Promise<never> => {
    if (stopping) process.exit(code);
    stopping = true;
    process.stderr.write('\nstopping the fleet…\n');
    await Promise.all(children.map((c) => terminate(c, 30_000)));
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => logger.warn({ err }, 'cleanup failed'));
    rmSync(FLEET_FILE, { force: true });
    logs.stop();
    lock.release();
    process.stderr.write('fleet stopped\n');
    tellWatchdog({ type: 'done' });
    watchdog.disconnect();
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    let redis: EmbeddedRedis | undefined;
    let redisUrl = config.REDIS_URL;
    const rolePids: Record<string, number> = {};
    const info: FleetInfo = { redisUrl: redisUrl ?? '', prefix, storeUrl: store, sinkUrl: sink, pid: process.pid, rolePids };
    if (!redisUrl) {
      redis = await startEmbeddedRedis({ dir: resolve('.tickfleet') });
      cleanups.push(() => redis!.stop());
      redisUrl = redis.url;
      info.redisPid = redis.pid;
      tellWatchdog({ type: 'last', pid: info.redisPid });
    }

    info.redisUrl = redisUrl;
    let env = envWith({
      REDIS_URL: redisUrl,
      TICKFLEET_PREFIX: prefix,
      TICKFLEET_STORE_URL: store,
      TICKFLEET_SINK_URL: sink,
      TICKFLEET_HEALTH_HOST: '127.0.0.1',
      [PARENT_PID_ENV]: String(process.pid),
      // The demo's emulations take any well-formed key; a configured key is passed on as is.
      POLYGON_API_KEY: config.POLYGON_API_KEY ?? (opts.demo ? DEMO_KEYS.POLYGON_API_KEY : ''),
      FINNHUB_API_KEY: config.FINNHUB_API_KEY ?? (opts.demo ? DEMO_KEYS.FINNHUB_API_KEY : ''),
      FRED_API_KEY: config.FRED_API_KEY ?? (opts.demo ? DEMO_KEYS.FRED_API_KEY : ''),
      ALPACA_API_KEY_ID: config.ALPACA_API_KEY_ID ?? (opts.demo ? DEMO_KEYS.ALPACA_API_KEY_ID : ''),
      ALPACA_API_SECRET_KEY: config.ALPACA_API_SECRET_KEY ?? (opts.demo ? DEMO_KEYS.ALPACA_API_SECRET_KEY : ''),
    });

    if (opts.demo) {
      const { startMockVenue } = await import('@tickfleet/mock-venue');
      const mock = await startMockVenue({ scenario: DEMO_SCENARIO });
      cleanups.push(() => mock.stop());
      info.mockVenueUrl = mock.url;
      env = envWith(demoStreamEnv(mock.url), env);
      await withStore(cmd, (s) => seedDemo(s, (v) => mock.baseUrl(v)));
    }

    // Each role's /metrics /healthz /readyz on a port chosen here, recorded in fleet.json so a
    // Prometheus (or an operator) can find them.
    const roles = ['scheduler', ...Array.from({ length: opts.workers }, (_, i) => `worker-${i}`)];
    info.metrics = {};
    for (const name of roles) {
      const port = await freePort();
      info.metrics[name] = `http://127.0.0.1:${port}/metrics`;
      const child = startRole(logs.path(name), [name === 'scheduler' ? 'scheduler' : 'worker'], { ...env, TICKFLEET_HEALTH_PORT: String(port) });
      children.push(child);
      if (child.pid !== undefined) {
        rolePids[name] = child.pid;
        tellWatchdog({ type: 'group', pid: child.pid });
      }
    }

    const { runDashboard } = await import('@tickfleet/dashboard');
    const dashboardOptions = {
      handleSignals: false,
      logger: createLogger({ role: 'dashboard', level: config.LOG_LEVEL, destination: createWriteStream(logs.path('dashboard'), { flags: 'a' }) }),
    };
    const dashboard = await runDashboard(
      { ...env, TICKFLEET_DASHBOARD_PORT: String(opts.dashboardPort), TICKFLEET_DASHBOARD_HOST: '127.0.0.1' },
      dashboardOptions,
    ).catch(async (err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      return runDashboard({ ...env, TICKFLEET_DASHBOARD_PORT: '0', TICKFLEET_DASHBOARD_HOST: '127.0.0.1' }, dashboardOptions);
    });
    cleanups.push(() => dashboard.close());
    info.dashboardUrl = dashboard.url;
    info.metrics.dashboard = `${dashboard.url}/metrics`;
    const prometheus =
      opts.prometheus === undefined
        ? undefined
        : await startFleetPrometheus({ port: opts.prometheus, targets: info.metrics, cleanups, watch: (pid) => tellWatchdog({ type: 'last', pid }) });
    writeFileSync(FLEET_FILE, JSON.stringify(info, null, 2));

    for (const c of children) {
      c.once('exit', (code, signal) => {
        if (!stopping) {
          process.stderr.write(`${c.spawnargs.slice(2).join(' ')} exited (${code ?? signal}); see ${LOG_DIR}\n`);
          void stopAll(1);
        }
      });
    }

    // From a checkout the CLI is `scripts/tickfleet` (README); an installed one is `tickfleet`.
    const cli = existsSync('scripts/tickfleet') ? 'scripts/tickfleet' : 'tickfleet';
    process.stdout.write(
      [
        'tickfleet is up',
        `  dashboard:  ${dashboard.url}  (queues: ${dashboard.url}/queues)`,
        `  redis:      ${redisUrl}${redis ? ' (private redis-server)' : ''}`,
        `  store:      ${store}`,
        `  sink:       ${sink}`,
        ...(prometheus ? [`  prometheus: ${prometheus.url}  (alerts: ${prometheus.alertsUrl}, targets: ${prometheus.targetsUrl})`] : []),
        ...(info.mockVenueUrl ? [`  emulations: ${info.mockVenueUrl}  (synthetic data, not real prices; stats: ${info.mockVenueUrl}/_mock/stats)`] : []),
        `  metrics:    ${Object.entries(info.metrics)
          .map(([name, url]) => `${name} ${url}`)
          .join(', ')}`,
        `  logs:       ${LOG_DIR}/{scheduler,worker-N,dashboard${prometheus ? ',prometheus' : ''}}.log (rotated past ${formatBytes(logs.maxBytes)}, ${logs.keep} older kept)`,
        `  try:        ${cli} status`,
        `              ${cli} data count binance BTC/USDT --timeframe 1m`,
        `              ${cli} backfill binance BTC/USDT --timeframe 1m --from 2024-01-01 --to 2024-01-08 --follow`,
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.stderr.write(`tickfleet up failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1);
  }
}

/** Starts `tickfleet <args>` as a child process logging to `logFile` (appending: RoleLogs rotates it in place). */
function startRole(logFile: string, args: string[], env: Env): ChildProcess {
  // The role writes its log file itself (not through a pipe to `up`), so it keeps logging, and
  // can say why it stops, when `up` is gone.
  const log = openSync(logFile, 'a');
  // Own process group: a terminal's Ctrl-C reaches only `up`, which stops the roles in order
  // (a second signal would make a role exit at once instead of finishing its units).
  const child = spawn(process.execPath, [CLI_ENTRY, ...args], { env, stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  return child;
}

/** `10 MiB`, `64 KiB`, `512 B`. */
function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MiB`;
  return n >= 1024 ? `${+(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
