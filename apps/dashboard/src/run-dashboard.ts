import { openBudgets } from '@tickfleet/budget';
import { parseConfig, type Env } from '@tickfleet/config';
import { connectRedis } from '@tickfleet/queues';
import { openStore } from '@tickfleet/store';
import { createLogger, onShutdown, rateLimitedLog, type Logger } from '@tickfleet/telemetry';
import { DashboardEnv } from './dashboard-env.js';
import { DashboardServer } from './dashboard-server.js';
import { assertCredentials } from './internal/dashboard-auth.js';

/** A started dashboard process's parts, for `tickfleet up`, which runs it beside other roles. */
export interface RunningDashboard {
  server: DashboardServer;
  url: string;
  /** Stops serving and closes Redis and the store (what SIGTERM does, without exiting). */
  close(): Promise<void>;
}

export interface RunDashboardOptions {
  /** Install SIGTERM/SIGINT handlers that stop the server and exit. @defaultValue true */
  handleSignals?: boolean;
  /** Where the dashboard logs (`tickfleet up` sends it to a log file). @defaultValue JSON lines on stdout */
  logger?: Logger;
}

/**
 * The dashboard process: parses `env` once (the process environment by default; credentials are
 * checked before anything is opened), opens the store and Redis, serves the overview, bull-board
 * and health endpoints, and on SIGTERM stops cleanly (unless `handleSignals` is false: then the caller calls `close`).
 */
export async function runDashboard(env?: Env, options: RunDashboardOptions = {}): Promise<RunningDashboard> {
  const config = parseConfig(DashboardEnv, env);
  const logger = options.logger ?? createLogger({ role: 'dashboard', level: config.LOG_LEVEL });
  const credentials = {
    token: config.TICKFLEET_DASHBOARD_TOKEN,
    user: config.TICKFLEET_DASHBOARD_USER,
    password: config.TICKFLEET_DASHBOARD_PASSWORD,
  };
  // Refuse a misconfigured board before opening anything.
  assertCredentials(config.TICKFLEET_DASHBOARD_ALLOW_ACTIONS, credentials);
  const stateStore = await openStore(config.TICKFLEET_STORE_URL);
  // Budget figures come from where the workers budget: the store, or TICKFLEET_BUDGET_URL's Redis.
  const budgets = await openBudgets(config.TICKFLEET_BUDGET_URL, stateStore, { prefix: config.TICKFLEET_PREFIX }).catch(async (err: unknown) => {
    await stateStore.close();
    throw err;
  });
  const store = budgets.store;
  // A Redis that does not answer ends the start with one line instead of a board waiting silently.
  const redis = await connectRedis(config.REDIS_URL, { blocking: false, connectionName: 'tickfleet-dashboard' }).catch(async (err: unknown) => {
    await budgets.close();
    await store.close();
    throw err;
  });
  // ioredis reports every failed reconnect; one line per cause per 10 s is enough to see it.
  const logRedisError = rateLimitedLog(logger, 10_000);
  redis.on('error', (err: NodeJS.ErrnoException) => logRedisError('warn', err.code ?? err.name, { err }, 'redis connection error'));
  let server: DashboardServer;
  try {
    server = new DashboardServer({
      redis,
      store,
      prefix: config.TICKFLEET_PREFIX,
      port: config.TICKFLEET_DASHBOARD_PORT,
      host: config.TICKFLEET_DASHBOARD_HOST,
      allowActions: config.TICKFLEET_DASHBOARD_ALLOW_ACTIONS,
      credentials,
      spoolDir: config.TICKFLEET_SPOOL_DIR,
      discoverMs: config.TICKFLEET_DASHBOARD_DISCOVER_MS,
      logger,
    });
    await server.start();
  } catch (err) {
    redis.disconnect();
    await budgets.close();
    await store.close();
    throw err;
  }
  logger.info({ url: server.url, venues: server.board.venues(), readOnly: !config.TICKFLEET_DASHBOARD_ALLOW_ACTIONS }, 'dashboard ready');
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      server.setDraining();
      await server.stop();
      await redis.quit().catch(() => redis.disconnect());
      await budgets.close();
      await store.close();
    })());
  if (options.handleSignals ?? true) onShutdown(logger, close, 10_000);
  return { server, url: server.url, close };
}
