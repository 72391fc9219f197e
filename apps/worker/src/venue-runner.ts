import { DelayedError, UnrecoverableError as BullUnrecoverableError, Worker, type Job as BullJob } from 'bullmq';
import {
  BannedError,
  BudgetExhaustedError,
  type Clock,
  type Connector,
  isTickfleetError,
  RateLimitedError,
} from '@tickfleet/core';
import { aimdLimitsFor, type ControlStep, type FleetVenueControl } from '@tickfleet/budget';
import { type JobLock, QueuedUnit, queueNameFor, type VenueQueues, type RedisClient } from '@tickfleet/queues';
import type { StateStore } from '@tickfleet/store';
import type { Logger } from '@tickfleet/telemetry';
import { createVenueAdapter, type VenueAdapter } from '@tickfleet/venues';
import type { BudgetGate } from './budget-gate.js';
import type { UnitExecutor } from './unit-executor.js';
import type { WorkerMetrics } from './worker-metrics.js';

export interface VenueRunnerOptions {
  connector: Connector;
  connection: RedisClient;
  prefix: string;
  queues: VenueQueues;
  control: FleetVenueControl;
  store: StateStore;
  executor: UnitExecutor;
  gate: BudgetGate;
  jobLock: JobLock;
  metrics: WorkerMetrics;
  logger: Logger;
  clock: Clock;
  /** BullMQ lock duration of a unit; renewed automatically while it runs. @defaultValue 30000 */
  lockDurationMs?: number;
  /** How often stalled units (their worker died) are looked for. @defaultValue 10000 */
  stalledIntervalMs?: number;
  /** Extra adapter options (e.g. polygon apiKey). */
  adapterOptions?: Record<string, unknown>;
  /** Book polling: per-instrument backoff after a failed snapshot. @defaultValue 5000 */
  bookBackoffBaseMs?: number;
  /** @defaultValue 300000 */
  bookBackoffMaxMs?: number;
}

/** Per-venue counters for the heartbeat line. */
export interface RunnerCounters {
  submitted: number;
  ok: number;
  rateLimited: number;
  yielded: number;
  errors: number;
}

/**
 * Serves one venue's queue: one BullMQ Worker whose local concurrency is the connector's cap;
 * the queue's global concurrency (set from the fleet-wide AIMD value) bounds the whole fleet, so
 * adding worker processes never multiplies the venue's in-flight units.
 */
export class VenueRunner {
  readonly venue: string;
  readonly counters: RunnerCounters = { submitted: 0, ok: 0, rateLimited: 0, yielded: 0, errors: 0 };
  private worker: Worker<QueuedUnit> | undefined;
  private adapter: VenueAdapter;
  private inflight = 0;
  private connector: Connector;
  /** Aborted on shutdown: units stop at their next page boundary and go back to the queue. */
  private readonly shutdown = new AbortController();

  constructor(private readonly options: VenueRunnerOptions) {
    this.venue = options.connector.venue;
    this.connector = options.connector;
    this.adapter = this.makeAdapter(options.connector);
  }

  get inflightUnits(): number {
    return this.inflight;
  }

  get cap(): number {
    return this.connector.maxInflight;
  }

  async start(): Promise<void> {
    const { connection, prefix, metrics } = this.options;
    this.options.control.configure(this.venue, aimdLimitsFor(this.connector));
    const concurrency = await this.options.control.concurrency(this.venue);
    await this.options.queues.setGlobalConcurrency(this.venue, concurrency);
    metrics.concurrency.set({ venue: this.venue }, concurrency);
    metrics.concurrencyCap.set({ venue: this.venue }, this.connector.maxInflight);
    this.worker = new Worker<QueuedUnit>(queueNameFor(this.venue), (job, token, signal) => this.process(job, token, signal), {
      connection,
      prefix,
      concurrency: this.connector.maxInflight,
      lockDuration: this.options.lockDurationMs ?? 30_000,
      stalledInterval: this.options.stalledIntervalMs ?? 10_000,
      maxStalledCount: 3,
      autorun: true,
    });
    this.worker.on('error', (err) => this.options.logger.error({ err, venue: this.venue }, 'bullmq worker error'));
  }

  /** Applies a changed connector (cap, base URL, policy) without dropping in-flight units. */
  update(connector: Connector): void {
    if (connector.baseUrl !== this.connector.baseUrl || connector.rateLimit.periodMs !== this.connector.rateLimit.periodMs) {
      this.adapter = this.makeAdapter(connector);
    }
    this.connector = connector;
    this.options.control.configure(this.venue, aimdLimitsFor(connector));
    if (this.worker && this.worker.concurrency !== connector.maxInflight) this.worker.concurrency = connector.maxInflight;
    this.options.metrics.concurrencyCap.set({ venue: this.venue }, connector.maxInflight);
  }

  /**
   * Stops taking units. In-flight units stop at their next page boundary (what they stored is
   * kept and the cursor reflects it) and return to the queue without burning an attempt; `force`
   * closes without waiting, leaving any unit still running to BullMQ's stalled-unit recovery.
   */
  async stop(force = false): Promise<void> {
    this.shutdown.abort(new Error('worker shutting down'));
    await this.worker?.close(force);
  }

  private makeAdapter(connector: Connector): VenueAdapter {
    return createVenueAdapter(connector.venue, {
      baseUrl: connector.baseUrl,
      hooks: this.options.gate.hooks(),
      clock: this.options.clock,
      // Binance reports used weight per minute; an emulation or another venue may use another window.
      usedWeightWindowMs: connector.rateLimit.periodMs,
      rateLimitWindowMs: connector.rateLimit.periodMs,
      ...this.options.adapterOptions,
    });
  }

  private async process(job: BullJob<QueuedUnit>, token: string | undefined, signal: AbortSignal | undefined): Promise<unknown> {
    const { clock, jobLock, logger: baseLogger, metrics, control, store } = this.options;
    const unit = QueuedUnit.parse(job.data);
    const logger = baseLogger.child({ venue: this.venue, unitId: job.id, jobId: unit.jobId, kind: unit.kind });
    const startedAt = clock.monotonic();

    this.inflight += 1;
    metrics.inflight.set({ venue: this.venue }, this.inflight);
    try {
      const locked = await jobLock.withLock(unit.jobId, async (lock) => {
        this.counters.submitted += 1;
        logger.debug({ attempt: job.attemptsMade + 1 }, 'unit started');
        const signals = [lock.signal, this.shutdown.signal, ...(signal ? [signal] : [])];
        const result = await this.options.executor.run({
          unit,
          adapter: this.adapter,
          signal: AbortSignal.any(signals),
          logger,
          heartbeat: async () => {
            if (lock.lost) throw new Error(`lost the job lock of ${unit.jobId}`);
          },
        });
        if (unit.kind !== 'backfill') {
          await store.jobs.complete(unit.jobId, { nextRunAt: unit.nextRunAt ?? clock.now(), records: result.records });
          if (unit.kind === 'book-poll') await this.resetBookBackoff(unit.jobId);
        }
        return result;
      });
      if (!locked.acquired) {
        // Another unit of the same job (a live run and a backfill chunk) holds its cursor: come back shortly.
        await job.moveToDelayed(clock.now() + 500 + Math.floor(Math.random() * 500), token);
        throw new DelayedError();
      }
      const result = locked.value;
      this.counters.ok += 1;
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: result.outcome });
      await this.applyConcurrency(await control.reportOutcome(this.venue, { ok: true, latencyMs: clock.monotonic() - startedAt }));
      logger.debug({ records: result.records, detail: result.detail }, 'unit done');
      return { records: result.records, outcome: result.outcome };
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      if (this.shutdown.signal.aborted) {
        // Interrupted by shutdown: back to the queue at once, no attempt burned.
        logger.info({ err: err instanceof Error ? err.message : String(err) }, 'unit returned to the queue on shutdown');
        metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'returned' });
        await job.moveToDelayed(clock.now(), token);
        throw new DelayedError();
      }
      return await this.handleFailure(job, token, unit, err, logger, clock.monotonic() - startedAt);
    } finally {
      this.inflight -= 1;
      metrics.inflight.set({ venue: this.venue }, this.inflight);
      metrics.unitSeconds.observe({ venue: this.venue, kind: unit.kind }, (clock.monotonic() - startedAt) / 1000);
    }
  }

  private async handleFailure(
    job: BullJob<QueuedUnit>,
    token: string | undefined,
    unit: QueuedUnit,
    err: unknown,
    logger: Logger,
    latencyMs: number,
  ): Promise<never> {
    const { clock, metrics, control, queues, store } = this.options;
    if (err instanceof BudgetExhaustedError) {
      // Yield: free the slot until the budget resets or the freeze ends; no attempt is burned.
      this.counters.yielded += 1;
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'yielded' });
      await job.moveToDelayed(Math.max(err.retryAtMs, clock.now() + 1), token);
      throw new DelayedError();
    }
    if (err instanceof RateLimitedError || err instanceof BannedError) {
      const untilMs = err instanceof BannedError ? err.bannedUntilMs : err.retryAtMs;
      const cause = err instanceof BannedError ? '418' : '429';
      this.counters.rateLimited += 1;
      metrics.rateLimited.inc({ venue: this.venue, status: cause });
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'rate_limited' });
      // Freeze the venue fleet-wide until the time it gave, halve its concurrency, and put the
      // unit back without burning an attempt; other venues' queues are untouched.
      const step = await control.onRateLimited(this.venue, untilMs, cause);
      await queues.freeze(this.venue, step.frozenUntilMs, clock.now());
      await this.applyConcurrency(step, true);
      logger.warn({ untilMs, cause, until: new Date(untilMs).toISOString() }, 'venue rate limited: frozen fleet-wide');
      await job.moveToDelayed(Math.max(untilMs, clock.now() + 1), token);
      throw new DelayedError();
    }
    this.counters.errors += 1;
    metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'failed' });
    await this.applyConcurrency(await control.reportOutcome(this.venue, { ok: false, latencyMs }));
    const message = err instanceof Error ? err.message : String(err);
    const retryable = isTickfleetError(err) ? err.retryable : true;
    if (unit.kind === 'book-poll') {
      // Per-instrument exponential backoff: the job waits, the venue's other instruments go on.
      const retryAtMs = clock.now() + (await this.bookBackoffMs(unit.jobId));
      await store.jobs.fail(unit.jobId, message, retryAtMs);
      logger.warn({ err, retryAt: new Date(retryAtMs).toISOString() }, 'book snapshot failed; instrument backing off');
      throw new BullUnrecoverableError(message);
    }
    const attempts = job.opts.attempts ?? 1;
    const lastAttempt = !retryable || job.attemptsMade + 1 >= attempts;
    logger.warn({ err, attempt: job.attemptsMade + 1, attempts, retryable }, 'unit failed');
    if (lastAttempt && unit.kind !== 'backfill') {
      await store.jobs.fail(unit.jobId, message, clock.now() + this.connector.freezeMs);
    }
    if (!retryable) throw new BullUnrecoverableError(message);
    throw err instanceof Error ? err : new Error(message);
  }

  /** Applies a fleet-wide AIMD step to the queue's global concurrency (only when it changed). */
  private async applyConcurrency(step: ControlStep, force = false): Promise<void> {
    if (step.change === 'none' && !force) return;
    const value = Math.min(step.concurrency, this.connector.maxInflight);
    await this.options.queues.setGlobalConcurrency(this.venue, value);
    this.options.metrics.concurrency.set({ venue: this.venue }, value);
  }

  private bookBackoffKey(): string {
    return `${this.options.prefix}:venue:{${this.venue}}:book-backoff`;
  }

  private async bookBackoffMs(jobId: string): Promise<number> {
    const streak = await this.options.connection.hincrby(this.bookBackoffKey(), jobId, 1);
    const base = this.options.bookBackoffBaseMs ?? 5000;
    const max = this.options.bookBackoffMaxMs ?? 300_000;
    const capped = Math.min(max, base * 2 ** Math.min(20, streak - 1));
    return Math.round(capped / 2 + Math.random() * (capped / 2));
  }

  private async resetBookBackoff(jobId: string): Promise<void> {
    await this.options.connection.hdel(this.bookBackoffKey(), jobId);
  }
}
