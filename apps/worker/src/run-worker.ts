import { openBudgets } from '@tickfleet/budget';
import { parseConfig, type Env } from '@tickfleet/config';
import { Pipeline, PipelineMetrics, openSink } from '@tickfleet/sinks';
import { StoreUnavailableError } from '@tickfleet/core';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry, HealthServer, onShutdown, type Logger } from '@tickfleet/telemetry';
import { FleetWorker } from './fleet-worker.js';
import { WORKER_DEFAULTS } from './worker-defaults.js';
import { WorkerEnv } from './worker-env.js';
import { openWorkerSpool, spoolHealthz } from './worker-spool.js';

/**
 * The worker process: parses its environment once, opens the store, the sink pipeline (with a
 * spool slot of its own) and Redis, serves every (or the chosen) venue queue, answers
 * /metrics /healthz /readyz, and on SIGTERM stops taking units, lets in-flight ones finish
 * within the grace period (then returns them), flushes the pipeline and exits 0.
 */
export async function runWorker(env?: Env): Promise<void> {
  const config = parseConfig(WorkerEnv, env);
  const logger = createLogger({ role: 'worker', level: config.LOG_LEVEL });
  const registry = createRegistry('worker');
  // One set of pipeline metrics shared by the spool and the pipeline, so the spool's bytes,
  // segments and drops reach /metrics (and the spool alerts can fire).
  const pipelineMetrics = new PipelineMetrics(registry);
  // The spool first: a directory that cannot hold one (full disk, not writable) fails the start
  // with one line naming it and the cause, before any connection is opened.
  const spool = openWorkerSpool(
    config.TICKFLEET_SPOOL_DIR,
    {
      onFull: config.TICKFLEET_SPOOL_ON_FULL,
      maxTotalBytes: config.TICKFLEET_SPOOL_MAX_BYTES,
      maxSegmentBytes: config.TICKFLEET_SPOOL_MAX_SEGMENT_BYTES,
      blockTimeoutMs: config.TICKFLEET_SPOOL_BLOCK_TIMEOUT_MS,
    },
    pipelineMetrics,
  );
  if (spool.recovery.truncatedBytes > 0 || spool.totalBytes > 0) {
    logger.info({ spoolDir: spool.dir, spoolBytes: spool.totalBytes, ...spool.recovery }, 'spool recovered; replaying what it holds');
  }
  const stateStore = await openStoreAtStart(config.TICKFLEET_STORE_URL, logger).catch(async (err: unknown) => {
    await spool.close();
    throw err;
  });
  // The store's own budgets, or the Redis budget of TICKFLEET_BUDGET_URL in its place.
  const budgets = await openBudgets(config.TICKFLEET_BUDGET_URL, stateStore, { prefix: config.TICKFLEET_PREFIX }).catch(async (err: unknown) => {
    await stateStore.close();
    await spool.close();
    throw err;
  });
  const store = budgets.store;
  const sink = await openSink(config.TICKFLEET_SINK_URL, {
    retry: {
      maxRetries: config.TICKFLEET_SINK_MAX_RETRIES,
      retryBaseMs: config.TICKFLEET_SINK_RETRY_BASE_MS,
      failuresForDegraded: config.TICKFLEET_SINK_FAILURES_FOR_DEGRADED,
    },
  }).catch(async (err: unknown) => {
    await budgets.close();
    await store.close();
    await spool.close();
    throw err;
  });
  const pipeline = new Pipeline({
    sink,
    spool,
    metrics: pipelineMetrics,
    logger,
    dedup: config.TICKFLEET_DEDUP === 'on' ? { windowMs: config.TICKFLEET_DEDUP_WINDOW_MS, maxKeys: config.TICKFLEET_DEDUP_MAX_KEYS } : false,
  });
  const worker = new FleetWorker({
    redisUrl: config.REDIS_URL,
    store,
    pipeline,
    logger,
    registry,
    prefix: config.TICKFLEET_PREFIX,
    heartbeatMs: config.TICKFLEET_HEARTBEAT_MS,
    connectorPollMs: config.TICKFLEET_CONNECTOR_POLL_MS,
    lockDurationMs: config.TICKFLEET_UNIT_LOCK_MS,
    stalledIntervalMs: config.TICKFLEET_STALLED_INTERVAL_MS,
    initialLookbackMs: config.TICKFLEET_INITIAL_LOOKBACK_MS,
    pollStatsMs: config.TICKFLEET_POLL_STATS_MS,
    ...(config.TICKFLEET_STREAMS === 'on'
      ? {
          streams: {
            endpoints: { binanceWsUrl: config.TICKFLEET_BINANCE_WS_URL, krakenWsUrl: config.TICKFLEET_KRAKEN_WS_URL },
            leaseTtlMs: config.TICKFLEET_STREAM_LEASE_TTL_MS,
            pollMs: config.TICKFLEET_STREAMS_POLL_MS,
            silenceTimeoutMs: config.TICKFLEET_STREAM_SILENCE_MS,
          },
        }
      : {}),
    ...(config.TICKFLEET_VENUES ? { venues: config.TICKFLEET_VENUES.split(',') } : {}),
    // Each key goes to its own venue's adapter only.
    adapterOptions: {
      ...(config.POLYGON_API_KEY ? { polygon: { apiKey: config.POLYGON_API_KEY } } : {}),
      ...(config.FRED_API_KEY ? { fred: { apiKey: config.FRED_API_KEY } } : {}),
      ...(config.FINNHUB_API_KEY ? { finnhub: { finnhubApiKey: config.FINNHUB_API_KEY } } : {}),
      ...(config.ALPACA_API_KEY_ID || config.ALPACA_API_SECRET_KEY
        ? {
            alpaca: {
              ...(config.ALPACA_API_KEY_ID ? { alpacaKeyId: config.ALPACA_API_KEY_ID } : {}),
              ...(config.ALPACA_API_SECRET_KEY ? { alpacaSecretKey: config.ALPACA_API_SECRET_KEY } : {}),
            },
          }
        : {}),
    },
  });
  let started = false;
  const health = new HealthServer({
    registry,
    port: config.TICKFLEET_HEALTH_PORT,
    host: config.TICKFLEET_HEALTH_HOST,
    liveness: { process: () => true },
    // Per served venue: its status, health, freeze, AIMD value, budget, the cap and this worker's
    // share of it; per held stream: state, counters, time quality; and the persistence side every
    // unit and stream writes through: the sink's state and retries, what the spool holds for
    // replay, and the dedup window as it is (off, or its bounds, keys held and drops).
    details: async () => ({
      venues: await worker.venueHealthz(),
      streams: worker.streamHealth(),
      persistence: {
        sink: pipeline.sink.state,
        sinkRetry: pipeline.sink.retry,
        ...spoolHealthz(spool, pipeline.replay?.running ?? false),
        dedup: pipeline.dedupStatus(),
      },
    }),
    readiness: {
      started: () => (started ? true : 'starting'),
      store: async () => {
        await store.ping();
        return true;
      },
    },
  });
  const port = await health.start();
  await worker.start();
  started = true;
  logger.info({ healthPort: port, venues: worker.venues, budgets: budgets.kind }, 'worker ready');
  onShutdown(
    logger,
    async () => {
      // Units abandoned after the grace period keep running until exit and fail against closed
      // connections; BullMQ's stalled-unit recovery gives them to another worker, so their errors
      // are logged, not allowed to turn a clean exit into a crash.
      process.on('unhandledRejection', (err) => logger.warn({ err }, 'abandoned unit failed during shutdown'));
      health.setDraining();
      await worker.stop(config.TICKFLEET_GRACE_MS);
      await pipeline.close();
      await sink.close();
      await budgets.close();
      await store.close();
      await health.stop();
    },
    config.TICKFLEET_GRACE_MS + 10_000,
  );
}

/**
 * The state store at start; a MongoDB store that does not answer (many pods starting at once
 * beside a loaded or restarting store) is tried again for up to {@link WORKER_DEFAULTS.storeOpenTimeoutMs}.
 * An SQLite file that cannot be opened fails at once: waiting does not fix it.
 */
export async function openStoreAtStart(url: string, logger: Logger): Promise<StateStore> {
  const retry = /^mongodb(\+srv)?:\/\//.test(url);
  const deadline = Date.now() + WORKER_DEFAULTS.storeOpenTimeoutMs;
  for (let waitMs: number = WORKER_DEFAULTS.storeOpenRetryMs; ; waitMs = Math.min(waitMs * 2, WORKER_DEFAULTS.storeOpenRetryMaxMs)) {
    try {
      return await openStore(url);
    } catch (err) {
      if (!retry || !(err instanceof StoreUnavailableError) || Date.now() + waitMs > deadline) throw err;
      logger.warn({ err: err.message, retryInMs: waitMs }, 'store unreachable at start; retrying');
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}
