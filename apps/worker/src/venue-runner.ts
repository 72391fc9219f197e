import { DelayedError, UnrecoverableError as BullUnrecoverableError, Worker, type Job as BullJob } from 'bullmq';
import {
  BannedError,
  BudgetExhaustedError,
  type Clock,
  JobLockLostError,
  linkedSignal,
  type Connector,
  effectiveLimit,
  MalformedPayloadError,
  RateLimitedError,
  SinkUnavailableError,
  SpoolFullError,
  StoreUnavailableError,
  TickfleetError,
  TransientError,
  NotFoundError,
  parseJobId,
  bookLoopKey,
  type BookLoopReport,
  type Envelope,
} from '@tickfleet/core';
import {
  aimdLimitsFor,
  type BudgetGate,
  type BudgetReservation,
  type ControlStep,
  type FailureCause,
  type FleetVenueControl,
  freezeEscalationFor,
  jitteredBackoffMs,
  OutcomeReporter,
} from '@tickfleet/budget';
import { QueuedUnit, queueNameFor, TRANSIENT_RETRY, transientRetryDelayMs, type VenueQueues, type RedisClient } from '@tickfleet/queues';
import { dueUnitToken, type StateStore } from '@tickfleet/store';
import { rateLimitedLog, type Logger } from '@tickfleet/telemetry';
import { createVenueAdapter, type RequestHooks, type VenueAdapter } from '@tickfleet/venues';
import type { ActiveSets } from './active-set.js';
import type { BookLoop, BookLoopHost } from './book-loop.js';
import { errorStatus, PollTelemetry, pollErrorClass, pollErrorEnvelope, pollStatsEnvelope } from './poll-telemetry.js';
import type { UnitExecutor, UnitOutcome } from './unit-executor.js';
import type { UnitLockHandle, UnitLocks } from './unit-locks.js';
import type { WorkerMetrics } from './worker-metrics.js';
import { WORKER_DEFAULTS } from './worker-defaults.js';

export interface VenueRunnerOptions {
  connector: Connector;
  connection: RedisClient;
  prefix: string;
  queues: VenueQueues;
  /** The venue's freeze, AIMD concurrency, book backoff and order-book cooldown. */
  control: FleetVenueControl;
  store: StateStore;
  executor: UnitExecutor;
  gate: BudgetGate;
  /** The job locks of the units that move a cursor (in the state store). */
  unitLocks: UnitLocks;
  metrics: WorkerMetrics;
  logger: Logger;
  clock: Clock;
  /** BullMQ lock duration of a unit; renewed automatically while it runs. @defaultValue {@link WORKER_DEFAULTS.unitLockMs} */
  lockDurationMs?: number;
  /** How often stalled units (their worker died) are looked for. @defaultValue {@link WORKER_DEFAULTS.stalledIntervalMs} */
  stalledIntervalMs?: number;
  /** Extra options of this venue's adapter (e.g. its apiKey). */
  adapterOptions?: Record<string, unknown>;
  /** Book polling: per-instrument backoff after a failed snapshot. @defaultValue BOOK_BACKOFF_DEFAULTS.baseMs */
  bookBackoffBaseMs?: number;
  /** @defaultValue BOOK_BACKOFF_DEFAULTS.maxMs */
  bookBackoffMaxMs?: number;
  /** The venues' active order-book sets (for the stats' active count and the error records' market). */
  activeSets: ActiveSets;
  /** This worker's id in its poll statistics. */
  workerId: string;
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
 * Serves one venue's queue: one BullMQ Worker whose local concurrency is this worker's share of
 * the connector's cap (see {@link localConcurrency}); the queue's global concurrency (set from the
 * fleet-wide AIMD value) bounds the whole fleet, so adding worker processes never multiplies the
 * venue's in-flight units.
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
  /** Per-instrument backoff after a failed book snapshot (counted fleet-wide by the venue control). */
  private readonly bookBackoff: { baseMs?: number; maxMs?: number };
  /** Bounded logging of repeated failures: one line per kind per minute, with a suppressed count. */
  private readonly sampleLog: ReturnType<typeof rateLimitedLog>;
  /** Unit outcomes and request latencies for the venue's fleet-wide AIMD and health record, batched (never awaited by a unit). */
  private readonly outcomes: OutcomeReporter;
  /**
   * Budget weight each running unit has spent, keyed by the abort signal the unit hands its
   * adapter calls (the request hooks get it back): counted in memory for the unit's finish line,
   * no store or Redis call.
   */
  private readonly unitWeight = new WeakMap<AbortSignal, { tokens: number }>();
  /** The budget a running unit reserved before its first request (`UnitContext.reserve`), keyed like `unitWeight`. */
  private readonly unitReservation = new WeakMap<AbortSignal, BudgetReservation>();
  /** Order-book polling statistics of this venue in this worker (flushed by the worker every interval). */
  private readonly pollStats: PollTelemetry;
  /** The venue's in-flight limit as last applied (the fleet-wide AIMD value within the cap). */
  private inflightLimit = 0;
  /** Workers serving the venue at the last count (the heartbeat's, this one included: at least 1). */
  private liveWorkers = 1;
  private bookLoop: BookLoop | undefined;

  constructor(private readonly options: VenueRunnerOptions) {
    this.venue = options.connector.venue;
    this.connector = options.connector;
    this.adapter = this.makeAdapter(options.connector);
    this.sampleLog = rateLimitedLog(options.logger, 60_000);
    this.outcomes = new OutcomeReporter({
      control: options.control,
      venue: this.venue,
      onStep: (step) => this.applyConcurrency(step),
      onError: (err) => this.sampleLog('warn', 'aimd-report', { venue: this.venue, err }, 'could not report unit outcomes to the venue control (sampled)'),
    });
    this.pollStats = new PollTelemetry({ venue: this.venue, workerId: options.workerId });
    this.bookBackoff = {
      ...(options.bookBackoffBaseMs !== undefined ? { baseMs: options.bookBackoffBaseMs } : {}),
      ...(options.bookBackoffMaxMs !== undefined ? { maxMs: options.bookBackoffMaxMs } : {}),
    };
  }

  get inflightUnits(): number {
    return this.inflight;
  }

  get cap(): number {
    return this.connector.maxInflight;
  }

  /** The connector's status as this runner last read it (refreshed every connector poll). */
  get status(): Connector['status'] {
    return this.connector.status;
  }

  /**
   * `liveWorkers`: the workers serving the venue now (this one included), from the heartbeat.
   */
  async start(liveWorkers: number): Promise<void> {
    const { connection, prefix, metrics } = this.options;
    this.liveWorkers = liveWorkers;
    this.options.control.configure(this.venue, aimdLimitsFor(this.connector));
    const concurrency = await this.options.control.concurrency(this.venue);
    this.inflightLimit = Math.min(concurrency, this.connector.maxInflight);
    await this.options.queues.setGlobalConcurrency(this.venue, concurrency);
    metrics.concurrency.set({ venue: this.venue }, concurrency);
    metrics.concurrencyCap.set({ venue: this.venue }, this.connector.maxInflight);
    this.worker = new Worker<QueuedUnit>(queueNameFor(this.venue), (job, token, signal) => this.process(job, token, signal), {
      connection,
      prefix,
      concurrency: this.localConcurrency(),
      lockDuration: this.options.lockDurationMs ?? WORKER_DEFAULTS.unitLockMs,
      stalledInterval: this.options.stalledIntervalMs ?? WORKER_DEFAULTS.stalledIntervalMs,
      maxStalledCount: 3,
      autorun: true,
    });
    // BullMQ retries its loop every few ms while Redis is down: one line per cause per 10 s.
    const logError = rateLimitedLog(this.options.logger, 10_000);
    this.worker.on('error', (err) => logError('error', (err as NodeJS.ErrnoException).code ?? err.name, { err, venue: this.venue }, 'bullmq worker error'));
  }

  /**
   * Applies a changed connector (cap, base URL, policy) and the venue's live-worker count without
   * dropping in-flight units.
   */
  update(connector: Connector, liveWorkers: number): void {
    if (
      connector.baseUrl !== this.connector.baseUrl ||
      connector.rateLimit.periodMs !== this.connector.rateLimit.periodMs ||
      connector.maxInflight !== this.connector.maxInflight ||
      connector.bookLoop?.depth !== this.connector.bookLoop?.depth
    ) {
      this.adapter = this.makeAdapter(connector);
    }
    this.connector = connector;
    this.liveWorkers = liveWorkers;
    this.options.control.configure(this.venue, aimdLimitsFor(connector));
    const local = this.localConcurrency();
    if (this.worker && this.worker.concurrency !== local) this.worker.concurrency = local;
    this.options.metrics.concurrencyCap.set({ venue: this.venue }, connector.maxInflight);
  }

  /**
   * This worker's share of the venue's cap: `ceil(cap / live workers)`, so the workers together
   * can hold the whole cap and no more than that plus rounding. With every worker's local
   * concurrency at the whole cap, each had free slots while the queue's global concurrency was
   * full, and BullMQ woke one of them for every unit another started (a marker, a futile
   * `moveToActive`): 0.6 wake-ups and 3 Redis commands per unit with 4 workers, and slots stayed
   * with whichever process finished first. A worker that dies still counts until its heartbeat
   * ages out (WORKER_LIVENESS_MS, 15 s), so until then and the others' next connector refresh they
   * may hold less than the cap; a worker that stops cleanly leaves at once.
   */
  localConcurrency(): number {
    return Math.ceil(this.connector.maxInflight / Math.max(1, this.liveWorkers));
  }

  /**
   * Stops taking units. In-flight units stop at their next page boundary (what they stored is
   * kept and the cursor reflects it) and return to the queue without burning an attempt; `force`
   * closes without waiting, leaving any unit still running to BullMQ's stalled-unit recovery.
   */
  async stop(force = false): Promise<void> {
    this.shutdown.abort(new Error('worker shutting down'));
    await this.worker?.close(force);
    await this.outcomes.flush();
  }

  /**
   * The venue's adapter, with the budget attached to every request it sends: before each one the
   * gate spends the request's weight from the venue's shared budget (waiting out a short refusal,
   * throwing BudgetExhaustedError to yield the unit, or RequestTooHeavyError to fail it), and after
   * each answer it records latency and raises the shared count to the weight the venue reports.
   * This is where a unit spends budget: the adapter only calls the hooks it is given.
   */
  private makeAdapter(connector: Connector): VenueAdapter {
    const { gate } = this.options;
    const spendBudget: RequestHooks = {
      beforeRequest: async (request) => {
        const reservation = request.signal && this.unitReservation.get(request.signal);
        const reserved = reservation ? await gate.fromReservation(request, reservation) : false;
        if (!reserved) await gate.beforeRequest(request);
        // Spent (the gate did not refuse it): counted to the unit that sent it (a reservation was when made).
        const spent = request.signal && this.unitWeight.get(request.signal);
        if (spent && !reserved) spent.tokens += request.weight;
      },
      afterResponse: (response) => {
        // AIMD's p95 is over requests: a unit of many fast requests is not slow however long it runs.
        this.outcomes.request(response.latencyMs);
        return gate.afterResponse(response);
      },
    };
    return createVenueAdapter(connector.venue, {
      baseUrl: connector.baseUrl,
      hooks: spendBudget,
      clock: this.options.clock,
      // Binance reports used weight per minute; an emulation or another venue may use another window.
      usedWeightWindowMs: connector.rateLimit.periodMs,
      rateLimitWindowMs: connector.rateLimit.periodMs,
      // The fleet-wide cap: Finnhub spaces requests by it to stay under its per-second cap.
      maxInflight: connector.maxInflight,
      // Adapters that pace in-process (Xetra, per market) leave it to the gate, which paces each
      // market fleet-wide with the connector's limit and pacing.
      pacing: 'off',
      // the loop's book depth (Binance at 1: top of book in bookTicker batches)
      ...(connector.bookLoop?.depth !== undefined ? { depthLimit: connector.bookLoop.depth } : {}),
      ...this.options.adapterOptions,
    });
  }

  private async process(job: BullJob<QueuedUnit>, token: string | undefined, signal: AbortSignal | undefined): Promise<unknown> {
    const { clock, unitLocks, logger: baseLogger, metrics, control, store } = this.options;
    const unit = QueuedUnit.parse(job.data);
    const logger = baseLogger.child({ venue: this.venue, unitId: job.id, jobId: unit.jobId, kind: unit.kind });
    if (unit.kind === 'book-poll') {
      // A venue cooling down polls no books: the unit waits without a request and without an attempt.
      const coolingMs = await this.options.control.bookCooldownMs(this.venue);
      if (coolingMs > 0) {
        metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'cooldown' });
        await job.moveToDelayed(clock.now() + coolingMs, token);
        throw new DelayedError();
      }
    }
    const startedAt = clock.monotonic();

    this.inflight += 1;
    metrics.inflight.set({ venue: this.venue }, this.inflight);
    /** Whether this run stored a page before it failed (a transient failure streak then starts over). */
    let progressed = false;
    /** Weight the unit's requests spent from the budget; set once it started (it may wait for its job's lock). */
    let spent: { tokens: number } | undefined;
    let status = 'error';
    let records = 0;
    // Aborted by shutdown, by BullMQ, or by the loss of the unit's job lock.
    const linked = linkedSignal([this.shutdown.signal, signal]);
    try {
      const runUnit = async (lock: UnitLockHandle | null) => {
        this.counters.submitted += 1;
        logger.info({ attempt: job.attemptsMade + 1 }, 'unit started');
        const unitSignal = linked.signal;
        spent = { tokens: 0 };
        this.unitWeight.set(unitSignal, spent);
        const result: UnitOutcome = await this.options.executor.run({
          unit,
          adapter: this.adapter,
          signal: unitSignal,
          logger,
          ...(lock?.job ? { job: lock.job } : {}),
          reserve: async (weight) => {
            // Only a fixed window bounds how long reserved weight may be sent in (see BudgetReservation).
            const { rateLimit } = this.connector;
            if (rateLimit.policy !== 'fixed-window' || weight <= 0) return;
            const tokens = Math.min(weight, effectiveLimit(rateLimit));
            this.unitReservation.set(unitSignal, await this.options.gate.reserve(this.venue, tokens));
            spent!.tokens += tokens;
          },
          heartbeat: async () => {
            progressed = true;
            if (lock?.lost) throw new JobLockLostError(unit.jobId);
          },
          progress: (p) => job.updateProgress({ ...p }).catch((err: unknown) => logger.debug({ err }, 'unit progress not written')),
        });
        // The cursor of the run's last page, left to the completion by the executor (records durable).
        const cursor = result.cursor;
        // The lock's token fences the job's writes below, and the completion frees the lock.
        const unitToken = lock?.token ?? undefined;
        // A backfill chunk never ends its job's run, nor does an option-chain unit other than its cycle's last.
        if (unit.kind !== 'backfill' && unit.endsRun !== false) {
          // a per-day unit serves many jobs: each completes (its lease freed, its next due time set)
          for (const id of unit.jobIds ?? [unit.jobId]) {
            const own = id === unit.jobId;
            const completion = {
              nextRunAt: unit.nextRunAt ?? clock.now(),
              records: result.records,
              ...(cursor === undefined || !own ? {} : { cursor }),
              ...(own && unitToken !== undefined ? { unitToken } : {}),
            };
            // a job of a per-day unit removed while it ran has nothing left to complete
            await store.jobs.complete(id, completion).catch((err: unknown) => {
              if (!(unit.jobIds && err instanceof NotFoundError)) throw err;
            });
            if (own && lock) lock.released = true;
          }
          if (unit.kind === 'book-poll') await control.resetBookBackoff(this.venue, unit.jobId);
        } else if (cursor !== undefined) await store.jobs.advanceCursor(unit.jobId, cursor, unitToken);
        return result;
      };
      // Backfill chunks are disjoint ranges that never move the job's cursor, so they run in
      // parallel up to the venue's cap and budget (serialising them on the job lock left one
      // backfill at one chunk at a time, the budget idle while hundreds of chunks waited). Live
      // units keep the lock: they own the cursor, and one job has one live unit at a time.
      // Option-chain units of one universe job are different underliers, and the round-robin cursor
      // they move only goes forward (a maximum), so they run in parallel without the lock too.
      const unlocked = unit.kind === 'backfill' || unit.kind === 'option-chain';
      const locked = unlocked
        ? { acquired: true as const, value: await runUnit(null) }
        : await unitLocks.withLock(unit.jobId, (err) => linked.abort(err), runUnit, unit.dueAt === undefined ? undefined : dueUnitToken(unit.dueAt));
      if (!locked.acquired) {
        // Another unit of the same job (a live run and a backfill chunk) holds its cursor: come back shortly.
        await job.moveToDelayed(clock.now() + 500 + Math.floor(Math.random() * 500), token);
        throw new DelayedError();
      }
      const result = locked.value;
      if (unit.kind === 'book-poll' && result.outcome === 'ok') await this.notePoll(unit, clock.monotonic() - startedAt);
      this.counters.ok += 1;
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: result.outcome });
      this.outcomes.record({ ok: true, records: result.records });
      status = result.outcome;
      records = result.records;
      logger.debug({ records: result.records, detail: result.detail }, 'unit done');
      return { records: result.records, outcome: result.outcome };
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      if (this.shutdown.signal.aborted) {
        // Interrupted by shutdown: back to the queue at once, no attempt burned.
        status = 'returned';
        logger.info({ err: err instanceof Error ? err.message : String(err) }, 'unit returned to the queue on shutdown');
        metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'returned' });
        await job.moveToDelayed(clock.now(), token);
        throw new DelayedError();
      }
      status = finishStatus(err);
      return await this.handleFailure(job, token, unit, err, logger, clock.monotonic() - startedAt, progressed);
    } finally {
      linked.dispose();
      this.inflight -= 1;
      const elapsedMs = clock.monotonic() - startedAt;
      metrics.inflight.set({ venue: this.venue }, this.inflight);
      metrics.unitSeconds.observe({ venue: this.venue, kind: unit.kind }, elapsedMs / 1000);
      // One finish line per started unit, whatever its end (the design's per-unit diagnostics).
      if (spent) logger.info({ status, records, tokens: spent.tokens, elapsed_ms: Math.round(elapsedMs) }, 'unit finished');
    }
  }

  private async handleFailure(
    job: BullJob<QueuedUnit>,
    token: string | undefined,
    unit: QueuedUnit,
    err: unknown,
    logger: Logger,
    latencyMs: number,
    progressed = false,
  ): Promise<never> {
    const { clock, metrics, control, store } = this.options;
    if (
      unit.kind === 'book-poll' &&
      !(err instanceof BudgetExhaustedError || err instanceof SpoolFullError || err instanceof StoreUnavailableError || err instanceof SinkUnavailableError)
    ) {
      // A failure of the venue (not of our budget, sink or store): counted, sampled, and toward the cooldown.
      await this.notePoll(unit, latencyMs, err);
    }
    if (err instanceof BudgetExhaustedError) {
      // Yield: free the slot until the budget resets or the freeze ends; no attempt is burned.
      this.counters.yielded += 1;
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'yielded' });
      await job.moveToDelayed(Math.max(err.retryAtMs, clock.now() + 1), token);
      throw new DelayedError();
    }
    if (err instanceof SpoolFullError) {
      // Sink down and spool full: nothing was acknowledged and no cursor moved; the unit comes back
      // later without burning an attempt (a full disk is not the unit's fault).
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'spool_full' });
      logger.warn({ spoolDir: err.dir, reason: err.reason, retryAt: new Date(err.retryAtMs).toISOString() }, 'spool full: unit returned to the queue');
      await job.moveToDelayed(Math.max(err.retryAtMs, clock.now() + 1), token);
      throw new DelayedError();
    }
    if (err instanceof StoreUnavailableError || err instanceof SinkUnavailableError) {
      // The unit could not reach the state store (locked, down, damaged) or, without a spool, the
      // sink: back to the queue, no attempt spent; it comes back by itself when the store does.
      metrics.unitFailures.inc({ venue: this.venue, cause: 'store_unavailable' });
      return this.retryLater(job, token, unit, 'store_unavailable', err.message, logger, TRANSIENT_RETRY.storeCapMs, progressed);
    }
    if (err instanceof RateLimitedError || err instanceof BannedError) {
      // The time the venue gave (Retry-After, ban end); 0 when it said nothing, and the connector's
      // freezeMs applies.
      const venueUntilMs = err instanceof BannedError ? err.bannedUntilMs : err.fromVenue ? err.retryAtMs : 0;
      const cause = err instanceof BannedError ? '418' : '429';
      this.counters.rateLimited += 1;
      metrics.rateLimited.inc({ venue: this.venue, status: cause });
      metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'rate_limited' });
      // Freeze the venue fleet-wide (one record, from which the control derives the queue limiter
      // that stops every worker taking its units), escalated when it keeps refusing, halve its
      // concurrency, and put the unit back without burning an attempt; other venues are untouched.
      const step = await control.onRateLimited(this.venue, venueUntilMs, cause, freezeEscalationFor(this.connector));
      await this.applyConcurrency(step, true);
      const untilMs = Math.max(step.frozenUntilMs, clock.now() + 1);
      logger.warn({ untilMs, cause, level: step.level, until: new Date(untilMs).toISOString() }, 'venue rate limited: frozen fleet-wide');
      await job.moveToDelayed(Math.max(untilMs, clock.now() + 1), token);
      throw new DelayedError();
    }
    this.counters.errors += 1;
    const cause = failureCause(err);
    metrics.unitFailures.inc({ venue: this.venue, cause });
    if (err instanceof MalformedPayloadError) {
      metrics.malformedPayloads.inc({ venue: this.venue });
      this.sampleLog(
        'warn',
        `malformed:${err.detail.replace(/\d+/g, '#').slice(0, 60)}`,
        { venue: this.venue, detail: err.detail, sample: err.sample },
        'malformed venue payload (sampled: one line per kind per minute)',
      );
    }
    const message = err instanceof Error ? err.message : String(err);
    // The cause and message feed the venue's health (the control keeps the message sanitized).
    this.outcomes.record({ ok: false, cause, message });
    const retryable = err instanceof TickfleetError ? err.retryable : true;
    if (unit.kind !== 'book-poll' && TRANSIENT_CAUSES.has(cause))
      return this.retryLater(job, token, unit, cause, message, logger, TRANSIENT_RETRY.capMs, progressed);
    metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: 'failed' });
    if (unit.kind === 'book-poll') {
      // Per-instrument exponential backoff: the job waits, the venue's other instruments go on. Its
      // end is on the fleet's timeline (the scheduler's), so this worker's clock moves it nowhere.
      const delayMs = jitteredBackoffMs(unit.jobId, await control.bookBackoffMs(this.venue, unit.jobId, this.bookBackoff));
      const retryAtMs = (await control.timeline.now()) + delayMs;
      await store.jobs.fail(unit.jobId, message, retryAtMs);
      logger.warn({ err, retryAt: new Date(retryAtMs).toISOString() }, 'book snapshot failed; instrument backing off');
      throw new BullUnrecoverableError(message);
    }
    const attempts = job.opts.attempts ?? 1;
    const lastAttempt = !retryable || job.attemptsMade + 1 >= attempts;
    logger.warn({ err, attempt: job.attemptsMade + 1, attempts, retryable }, 'unit failed');
    if (lastAttempt && unit.kind !== 'backfill') {
      for (const id of unit.jobIds ?? [unit.jobId]) {
        await store.jobs.fail(id, message, clock.now() + this.connector.freezeMs).catch((storeErr: unknown) => {
          if (!(unit.jobIds && storeErr instanceof NotFoundError)) throw storeErr;
        });
      }
    }
    if (lastAttempt && unit.kind === 'backfill' && unit.backfillId && unit.fromMs !== undefined && unit.toMs !== undefined) {
      // The chunk ends failed with its reason, so the backfill can end (`failed`) instead of
      // waiting forever for a unit BullMQ will not run again.
      const reason = retryable ? `out of attempts (${attempts}): ${message}` : `unrecoverable: ${message}`;
      // If the store cannot record it, the chunk stays owed and the scheduler queues it again.
      await store.backfills
        .chunkFailed(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs }, reason)
        .catch((storeErr: unknown) => logger.warn({ err: storeErr, backfillId: unit.backfillId }, 'could not record the failed backfill chunk'));
    }
    if (!retryable) throw new BullUnrecoverableError(message);
    throw err instanceof Error ? err : new Error(message);
  }

  /**
   * Puts a unit that failed for a transient cause back on the queue after a capped exponential
   * backoff, without spending a BullMQ attempt: a storm of any length delays the unit, it never
   * exhausts it. The streak and the last cause ride on the unit's data (shown by the dashboard).
   */
  private async retryLater(
    job: BullJob<QueuedUnit>,
    token: string | undefined,
    unit: QueuedUnit,
    cause: FailureCause,
    message: string,
    logger: Logger,
    capMs: number,
    progressed: boolean,
  ): Promise<never> {
    const { clock, metrics } = this.options;
    // A run that stored pages before failing was not stuck: its backoff starts over.
    const failures = progressed ? 1 : ((job.data as QueuedUnit & { retry?: UnitRetryState }).retry?.failures ?? 0) + 1;
    const retryAtMs = clock.now() + transientRetryDelayMs(failures, capMs);
    metrics.units.inc({ venue: this.venue, kind: unit.kind, outcome: cause === 'store_unavailable' ? 'store_unavailable' : 'retried' });
    const retry: UnitRetryState = { failures, cause, lastError: message.slice(0, 500), atMs: clock.now() };
    await job.updateData({ ...job.data, retry } as QueuedUnit);
    this.sampleLog(
      'warn',
      `retry:${cause}`,
      { venue: this.venue, unitId: job.id, cause, failures, err: message, retryAt: new Date(retryAtMs).toISOString() },
      'unit failed for a transient cause; retrying later (sampled)',
    );
    logger.debug({ cause, failures, retryAt: new Date(retryAtMs).toISOString() }, 'unit returned to the queue after a transient failure');
    await job.moveToDelayed(retryAtMs, token);
    throw new DelayedError();
  }

  /**
   * Counts one finished book poll (`err` absent: it succeeded) in the venue's poll statistics and,
   * unless the venue refused us (429/418, the freeze's business), in the fleet-wide cooldown
   * window; logs the poll that started a cooldown. A Redis failure here never fails the unit.
   */
  private async notePoll(unit: QueuedUnit, latencyMs: number, err?: unknown): Promise<void> {
    this.countPoll(parseJobId(unit.jobId).symbol, latencyMs, err);
    await this.reportToCooldown(err);
  }

  /** One instrument's poll in the venue's poll statistics and metrics. */
  private countPoll(symbol: string, latencyMs: number, err?: unknown): void {
    const market = this.options.activeSets.cached(this.venue)?.instruments[symbol]?.market;
    const errorClass = err === undefined ? undefined : pollErrorClass(err);
    const status = err === undefined ? undefined : errorStatus(err);
    this.pollStats.record({
      symbol,
      ok: err === undefined,
      latencyMs,
      ...(errorClass === undefined ? {} : { errorClass }),
      ...(status === undefined ? {} : { status }),
      ...(err === undefined
        ? {}
        : { errorType: err instanceof Error ? err.constructor.name : typeof err, message: err instanceof Error ? err.message : String(err) }),
      ...(market ? { marketId: market.marketId, ...(market.slug === undefined ? {} : { slug: market.slug }) } : {}),
    });
    this.options.metrics.bookPolls.inc({ venue: this.venue, outcome: errorClass ?? 'ok' });
  }

  private async reportToCooldown(err?: unknown): Promise<void> {
    if (err !== undefined && pollErrorClass(err) === 'http_429') return;
    try {
      const { untilMs, started } = await this.options.control.reportBookPoll(this.venue, err !== undefined, this.connector.bookCooldown);
      if (started) {
        this.options.metrics.bookCooldowns.inc({ venue: this.venue });
        this.options.logger.warn(
          { venue: this.venue, until: new Date(untilMs).toISOString(), settings: this.connector.bookCooldown },
          'most book polls of the venue failed in one window: its book polling cools down fleet-wide',
        );
      }
    } catch (reportErr) {
      this.sampleLog('warn', 'cooldown-report', { venue: this.venue, err: reportErr }, 'could not count a book poll toward the venue cooldown (sampled)');
    }
  }

  /**
   * What the venue's book poll loop uses of this runner: the budgeted adapter, the AIMD value, and
   * the outcomes. A loop request counts once toward the cooldown window and AIMD (it is one request
   * to the venue, whatever its books); each of its books counts in the poll statistics; a 429
   * freezes the venue and halves its concurrency as a unit's would.
   */
  bookLoopHost(): BookLoopHost {
    return {
      adapter: () => this.adapter,
      inflightLimit: () => this.inflightLimit,
      notePoll: (symbol, latencyMs, err) => this.countPoll(symbol, latencyMs, err),
      noteRequest: async (latencyMs, err) => {
        if (err instanceof RateLimitedError || err instanceof BannedError) {
          const venueUntilMs = err instanceof BannedError ? err.bannedUntilMs : err.fromVenue ? err.retryAtMs : 0;
          const cause = err instanceof BannedError ? '418' : '429';
          this.counters.rateLimited += 1;
          this.options.metrics.rateLimited.inc({ venue: this.venue, status: cause });
          const step = await this.options.control.onRateLimited(this.venue, venueUntilMs, cause, freezeEscalationFor(this.connector));
          await this.applyConcurrency(step, true);
          return;
        }
        if (err === undefined) this.outcomes.record({ ok: true, latencyMs, records: 0 });
        else {
          const cause = failureCause(err);
          this.options.metrics.unitFailures.inc({ venue: this.venue, cause });
          this.outcomes.record({ ok: false, latencyMs, cause, message: err instanceof Error ? err.message : String(err) });
        }
        await this.reportToCooldown(err);
      },
    };
  }

  /** The venue's book loop, whose report the poll statistics carry. */
  attachBookLoop(loop: BookLoop | undefined): void {
    this.bookLoop = loop;
  }

  /**
   * Ends this venue's poll-statistics interval `[fromMs, toMs)`: its `poll_stats` record and the
   * sampled `poll_errors` records as envelopes (none for a venue that neither polled books nor has
   * an active set), and the stats gauges set.
   */
  flushPollStats(fromMs: number, toMs: number): Envelope[] {
    const set = this.options.activeSets.cached(this.venue);
    if (this.pollStats.idle && !set) return [];
    const cooldownRemainingMs = this.options.control.knownBookCooldownMs(this.venue);
    const loop = this.bookLoop?.report();
    if (loop) this.publishLoopReport(loop);
    const { stats: polled, errors } = this.pollStats.flush(fromMs, toMs, {
      activeInstruments: set ? Object.keys(set.instruments).length : 0,
      activeVersion: set?.version ?? 0,
      cooldownRemainingMs,
      inflightLimit: this.inflightLimit,
      // The design's pool size: this worker's slots for the venue.
      poolSize: this.localConcurrency(),
    });
    const stats = loop
      ? {
          ...polled,
          loop: {
            shares: loop.shares,
            instruments: loop.instruments,
            unchanged: loop.unchanged,
            requests: loop.requests,
            weight: loop.weight,
            cycles: loop.cycles,
            p50AgeMs: loop.p50AgeMs,
            p95AgeMs: loop.p95AgeMs,
          },
        }
      : polled;
    const { metrics } = this.options;
    metrics.bookActiveInstruments.set({ venue: this.venue }, stats.activeInstruments);
    metrics.bookCooldownSeconds.set({ venue: this.venue }, cooldownRemainingMs / 1000);
    if (stats.p50LatencyMs !== null) metrics.bookPollLatencyP50.set({ venue: this.venue }, stats.p50LatencyMs / 1000);
    if (stats.p95LatencyMs !== null) metrics.bookPollLatencyP95.set({ venue: this.venue }, stats.p95LatencyMs / 1000);
    return [pollStatsEnvelope(stats), ...errors.map((e, i) => pollErrorEnvelope(e, this.options.workerId, fromMs, toMs, i))];
  }

  /** This worker's loop report in the venue's `book-loop:live` hash (for `status` and the dashboard); best effort. */
  private publishLoopReport(report: BookLoopReport): void {
    const key = bookLoopKey(this.options.prefix, this.venue, 'live');
    this.options.connection
      .hset(key, this.options.workerId, JSON.stringify(report))
      .catch((err: unknown) => this.sampleLog('warn', 'loop-report', { venue: this.venue, err }, 'could not publish the book loop report (sampled)'));
  }

  /** Applies a fleet-wide AIMD step to the queue's global concurrency (only when it changed). */
  private async applyConcurrency(step: ControlStep, force = false): Promise<void> {
    if (step.change === 'none' && !force) return;
    const value = Math.min(step.concurrency, this.connector.maxInflight);
    this.inflightLimit = value;
    await this.options.queues.setGlobalConcurrency(this.venue, value);
    this.options.metrics.concurrency.set({ venue: this.venue }, value);
  }
}

/** The `status` of a unit's finish line when it ended by `err`. */
function finishStatus(err: unknown): string {
  if (err instanceof BudgetExhaustedError || err instanceof SpoolFullError) return 'yielded';
  if (err instanceof RateLimitedError || err instanceof BannedError) return 'rate_limited';
  return 'error';
}

/** Causes that pass by themselves: retried without limit after a capped backoff. */
const TRANSIENT_CAUSES: ReadonlySet<FailureCause> = new Set(['server_error', 'timeout', 'connection', 'malformed', 'store_unavailable']);

/** What a unit carries about its transient failures (in its BullMQ data, next to the unit). */
export interface UnitRetryState {
  failures: number;
  cause: FailureCause;
  lastError: string;
  atMs: number;
}

/**
 * Why a unit attempt failed (one of the venue control's FAILURE_CAUSES), for
 * `tickfleet_unit_failures_total{cause}`, the retry policy and the venue's health window.
 * Classifies a failure by type, never by message. A TransientError without a status or an
 * underlying transport error is one of our own consistency checks (a unit without range, a job
 * without timeframe): that is `other`, which spends attempts, rather than a fault to outwait.
 */
export function failureCause(err: unknown): FailureCause {
  if (err instanceof StoreUnavailableError || err instanceof SinkUnavailableError) return 'store_unavailable';
  if (err instanceof MalformedPayloadError) return 'malformed';
  if (err instanceof TransientError) {
    if (err.status !== undefined) return 'server_error';
    const name = (err.cause as { name?: unknown } | undefined)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
    return err.cause === undefined ? 'other' : 'connection';
  }
  if (err instanceof TickfleetError && !err.retryable) return 'unrecoverable';
  return 'other';
}
