import { DEFAULTS, parseConfig, type Env } from '@tickfleet/config';
import { openStore } from '@tickfleet/store';
import { createLogger, createRegistry, HealthServer, onShutdown, type Logger } from '@tickfleet/telemetry';
import { SchedulerEnv } from './env.js';
import { Scheduler } from './scheduler.js';

export interface RunSchedulerOptions {
  /** Install SIGTERM/SIGINT handlers that stop cleanly and exit 0. @defaultValue true */
  handleSignals?: boolean;
  logger?: Logger;
}

export interface RunningScheduler {
  scheduler: Scheduler;
  health: HealthServer;
  /** Port of the health server. */
  port: number;
  config: SchedulerEnv;
  /** Resigns the lead, stops ticking, closes the health server and the store. */
  stop(): Promise<void>;
}

/**
 * The `scheduler` role: parses `env` (the process environment by default; a bad variable throws a
 * ConfigError naming it), opens the store, serves /metrics /healthz /readyz, and ticks until stopped.
 */
export async function runScheduler(env?: Env, options: RunSchedulerOptions = {}): Promise<RunningScheduler> {
  const config = parseConfig(SchedulerEnv, env);
  const logger = options.logger ?? createLogger({ role: 'scheduler', level: config.LOG_LEVEL });
  const registry = createRegistry('scheduler');
  const store = await openStore(config.TICKFLEET_STORE_URL);
  const scheduler = new Scheduler({
    store,
    redisUrl: config.REDIS_URL,
    prefix: config.TICKFLEET_PREFIX,
    tickMs: config.TICKFLEET_SCHEDULER_TICK_MS,
    batchSize: config.TICKFLEET_SCHEDULER_BATCH,
    leaseMs: config.TICKFLEET_SCHEDULER_LEASE_MS,
    leaderTtlMs: config.TICKFLEET_SCHEDULER_LEADER_TTL_MS,
    repairEveryMs: config.TICKFLEET_SCHEDULER_REPAIR_MS,
    sessionDayStarts: { minuteStartDays: config.ALPACA_MINUTE_START_DAYS },
    symbolsPerUnit: { polygon: config.POLYGON_SYMBOLS_PER_UNIT },
    cadence: {
      jitterMs: config.TICKFLEET_SCHEDULER_JITTER_MS,
      closeDelayMs: config.TICKFLEET_SCHEDULER_CLOSE_DELAY_MS,
      bookEveryMs: config.TICKFLEET_SCHEDULER_BOOK_EVERY_MS,
      tradesEveryMs: config.TICKFLEET_SCHEDULER_TRADES_EVERY_MS,
      discoveryEveryMs: config.TICKFLEET_SCHEDULER_DISCOVERY_EVERY_MS,
      optionsEveryMs: config.TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS,
      filesDelayMs: config.TICKFLEET_SCHEDULER_FILES_DELAY_MS,
      seriesDelayMs: config.TICKFLEET_SCHEDULER_SERIES_DELAY_MS,
    },
    logger,
    registry,
  });
  const health = new HealthServer({
    registry,
    port: config.TICKFLEET_HEALTH_PORT ?? config.PORT ?? DEFAULTS.healthPort,
    host: config.TICKFLEET_HEALTH_HOST,
    liveness: { ticking: () => scheduler.isLive() },
    readiness: {
      redis: () => scheduler.pingRedis(),
      store: async () => {
        await store.ping();
        return true;
      },
    },
    routes: {
      '/status': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ role: 'scheduler', leader: scheduler.isLeader }));
      },
    },
  });
  const port = await health.start();
  scheduler.start();
  logger.info({ port, store: store.kind, tickMs: config.TICKFLEET_SCHEDULER_TICK_MS, prefix: config.TICKFLEET_PREFIX }, 'scheduler started');

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      health.setDraining();
      await scheduler.stop();
      await health.stop();
      await store.close();
    })());
  if (options.handleSignals ?? true) onShutdown(logger, stop, 10_000);
  return { scheduler, health, port, config, stop };
}
