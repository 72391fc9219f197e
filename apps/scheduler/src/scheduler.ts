import { hostname } from 'node:os';
import { aimdLimitsFor, FleetVenueControl, STATUS_EFFECTS } from '@tickfleet/budget';
import {
  DEFAULT_SESSION_DAY_STARTS,
  DEFAULT_UNIVERSE_PER_CYCLE,
  MAX_UNIVERSE_SYMBOLS,
  nextSessionDay,
  parseJobId,
  sessionAfter,
  sessionDayFinalAt,
  sessionDayVenueOf,
  systemClock,
  universeOf,
  type Clock,
  type Job,
  type SessionDayStarts,
} from '@tickfleet/core';
import { createRedisConnection, QUEUE_PREFIX, unitJobId, VenueQueues, type QueuedUnit, type RedisClient } from '@tickfleet/queues';
import type { StateStore } from '@tickfleet/store';
import { createLogger, createRegistry, type Logger, type Registry } from '@tickfleet/telemetry';
import { dailyFilesRange, CADENCE_DEFAULTS, nextRunAt, unitKindFor, type CadenceOptions } from './cadence.js';
import { LeaderElection } from './leader-election.js';
import { LeaseHolder } from './lease-holder.js';
import { SchedulerMetrics } from './scheduler-metrics.js';
import { SCHEDULER_DEFAULTS } from './scheduler-defaults.js';

export interface SchedulerOptions {
  store: StateStore;
  /** Redis URL of the fleet: the venue queues and the leader lock live there. */
  redisUrl: string;
  /** Key prefix of queues and the leader lock; every role of one fleet uses the same. @defaultValue {@link QUEUE_PREFIX} */
  prefix?: string;
  /** Time between ticks (followers try to lead once per tick). @defaultValue {@link SCHEDULER_DEFAULTS.tickMs} */
  tickMs?: number;
  /** Jobs claimed per store call; a tick claims again while full batches come back. @defaultValue {@link SCHEDULER_DEFAULTS.batchSize} */
  batchSize?: number;
  /** Batches per tick at most, so one tick of a huge backlog stays short. @defaultValue {@link SCHEDULER_DEFAULTS.maxBatchesPerTick} */
  maxBatchesPerTick?: number;
  /** Claimed jobs of one venue enqueued per call. @defaultValue {@link SCHEDULER_DEFAULTS.enqueueChunk} */
  enqueueChunk?: number;
  /**
   * Chunks whose enqueue may be under way at once; the next chunk is sent, or the next batch
   * claimed, while fewer are. 1 claims and enqueues in turns. @defaultValue {@link SCHEDULER_DEFAULTS.enqueueDepth}
   */
  enqueueDepth?: number;
  /**
   * Lease set on claimed jobs. The worker releases it (`store.jobs.complete`/`fail`) when the unit
   * ends; if it never does (the unit waits in a frozen queue, or its worker died), the job is
   * claimed again after the lease and the deterministic unit id turns that into a no-op while the
   * unit is still queued. A stopping scheduler ends the leases it took, and a new leader those taken
   * for another Redis epoch ({@link LeaseHolder}), so neither waits for this. @defaultValue {@link SCHEDULER_DEFAULTS.leaseMs}
   */
  leaseMs?: number;
  /** Leader lock TTL. @defaultValue {@link SCHEDULER_DEFAULTS.leaderTtlMs} */
  leaderTtlMs?: number;
  /** Cadences per job type; see {@link CadenceOptions}. */
  cadence?: Partial<CadenceOptions>;
  /** @defaultValue systemClock */
  clock?: Clock;
  logger?: Logger;
  registry?: Registry;
  /** Identity of this replica in the leader lock. @defaultValue `<hostname>-<pid>` */
  id?: string;
  /**
   * How often the leader compares Redis with the store: it re-creates the units of backfill chunks
   * the store still owes (lost with a Redis restart, or failed by BullMQ without the chunk being
   * recorded) and re-applies a venue queue's missing global concurrency. @defaultValue {@link SCHEDULER_DEFAULTS.repairEveryMs}
   */
  repairEveryMs?: number;
  /** Owed chunks read per store call during a repair. @defaultValue {@link SCHEDULER_DEFAULTS.repairBatch} */
  repairBatch?: number;
  /**
   * A backfill's creator (`tickfleet backfill`) records it with its chunks, then enqueues their
   * units: a repair leaves the chunks of a backfill created less than this long ago to its creator
   * (re-creating them would report units lost that were only not queued yet). @defaultValue {@link SCHEDULER_DEFAULTS.repairGraceMs}
   */
  repairGraceMs?: number;
  /**
   * Where per-day jobs (Alpaca day and minute bars) without `since` start: minute bars
   * `minuteStartDays` back (ALPACA_MINUTE_START_DAYS), day bars `dayStartDays` back. @defaultValue {@link DEFAULT_SESSION_DAY_STARTS}
   */
  sessionDayStarts?: Partial<SessionDayStarts>;
  /** Symbols per per-day unit, by venue, over SESSION_DAY_VENUES (POLYGON_SYMBOLS_PER_UNIT sets polygon's, default 3). */
  symbolsPerUnit?: Readonly<Record<string, number>>;
}

export interface RepairResult {
  /** Owed chunks looked at (of backfills older than the repair's grace). */
  owed: number;
  /** Units re-created because their chunk was owed and no unit of it was queued. */
  recreated: number;
  /** Venues whose queue had no global concurrency, and the value set. */
  concurrency: Array<{ venue: string; value: number }>;
}

export interface TickResult {
  leader: boolean;
  claimed: number;
  added: number;
  duplicates: number;
  requeued: number;
}

/**
 * Turns due jobs into units. Every tick, the leader claims due jobs from the state store in
 * batches and adds one unit each to its venue's queue with a deterministic id (job id + due
 * time), so neither a rescan, a restart, nor a second scheduler ever queues a unit twice. Each
 * unit carries the job's next due time, which the worker stores when it completes the job.
 */
export class Scheduler {
  readonly metrics: SchedulerMetrics;
  readonly registry: Registry;
  readonly election: LeaderElection;
  readonly queues: VenueQueues;
  private readonly store: StateStore;
  private readonly connection: RedisClient;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly tickMs: number;
  private readonly batchSize: number;
  private readonly maxBatchesPerTick: number;
  private readonly enqueueChunk: number;
  private readonly enqueueDepth: number;
  private readonly leaseMs: number;
  private readonly cadence: CadenceOptions;
  private running = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastTickEndMs: number | undefined;
  private readonly repairEveryMs: number;
  private readonly repairBatch: number;
  private readonly repairGraceMs: number;
  private readonly control: FleetVenueControl;
  private lastRepairMs: number | undefined;
  private readonly sessionDayStarts: SessionDayStarts;
  private readonly symbolsPerUnit: Readonly<Record<string, number>>;
  private readonly leaseHolder: LeaseHolder;
  /** Every holder this scheduler's claims named (one per Redis epoch it saw): what its stop releases. */
  private readonly holders = new Set<string>();
  /** Set when this replica gains the lead: the next tick ends leases taken for another Redis epoch. */
  private staleLeasesDue = false;

  private loopVenues: { atMs: number; venues: Set<string> } | undefined;

  constructor(options: SchedulerOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? createLogger({ role: 'scheduler' });
    this.registry = options.registry ?? createRegistry('scheduler');
    this.metrics = new SchedulerMetrics(this.registry);
    this.tickMs = options.tickMs ?? SCHEDULER_DEFAULTS.tickMs;
    this.batchSize = options.batchSize ?? SCHEDULER_DEFAULTS.batchSize;
    this.maxBatchesPerTick = options.maxBatchesPerTick ?? SCHEDULER_DEFAULTS.maxBatchesPerTick;
    this.enqueueChunk = Math.max(1, Math.floor(options.enqueueChunk ?? SCHEDULER_DEFAULTS.enqueueChunk));
    this.enqueueDepth = Math.max(1, Math.floor(options.enqueueDepth ?? SCHEDULER_DEFAULTS.enqueueDepth));
    this.leaseMs = options.leaseMs ?? SCHEDULER_DEFAULTS.leaseMs;
    this.cadence = { ...CADENCE_DEFAULTS, ...options.cadence };
    this.repairEveryMs = options.repairEveryMs ?? SCHEDULER_DEFAULTS.repairEveryMs;
    this.repairBatch = options.repairBatch ?? SCHEDULER_DEFAULTS.repairBatch;
    this.repairGraceMs = options.repairGraceMs ?? SCHEDULER_DEFAULTS.repairGraceMs;
    this.sessionDayStarts = { ...DEFAULT_SESSION_DAY_STARTS, ...options.sessionDayStarts };
    this.symbolsPerUnit = options.symbolsPerUnit ?? {};
    const prefix = options.prefix ?? QUEUE_PREFIX;
    // Producer connection: commands fail after a few retries instead of hanging a tick forever.
    this.connection = createRedisConnection(options.redisUrl, { blocking: false, connectionName: 'tickfleet-scheduler' });
    this.connection.on('error', (err: Error) => this.logger.debug({ err }, 'redis connection error'));
    this.queues = new VenueQueues(this.connection, {
      prefix,
      onError: (err, venue) => this.logger.debug({ err, venue }, 'queue connection error'),
    });
    this.control = new FleetVenueControl(this.connection, { prefix, clock: this.clock });
    // A reconnect may mean a restarted Redis that lost its queues: repair on the next tick.
    this.connection.on('ready', () => {
      this.lastRepairMs = undefined;
    });
    const id = options.id ?? `${hostname()}-${process.pid}`;
    this.leaseHolder = new LeaseHolder(this.connection, `${prefix}:scheduler:epoch`, id);
    this.election = new LeaderElection(this.connection, {
      key: `${prefix}:scheduler:leader`,
      id,
      ttlMs: options.leaderTtlMs ?? SCHEDULER_DEFAULTS.leaderTtlMs,
      logger: this.logger,
      onChange: (leader) => {
        this.metrics.isLeader.set(leader ? 1 : 0);
        this.staleLeasesDue = leader;
      },
    });
  }

  get isLeader(): boolean {
    return this.election.isLeader;
  }

  /** Starts ticking every `tickMs` (the first tick runs at once). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /**
   * Stops ticking, waits for a running tick, ends the leases this scheduler took (the next leader,
   * or the next `tickfleet up`, claims those jobs at once instead of after the lease; a unit still
   * queued gets the same deterministic id again, so nothing runs twice), resigns the lead, and
   * closes the queues.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loopDone;
    await this.releaseOwnLeases();
    await this.election.resign();
    await this.queues.close();
    await this.connection.quit().catch(() => undefined);
  }

  /** Liveness: ticks keep finishing (within ten tick periods, at least 30 s). */
  isLive(): boolean {
    if (!this.running || this.lastTickEndMs === undefined) return this.running;
    return this.clock.monotonic() - this.lastTickEndMs < Math.max(30_000, 10 * this.tickMs);
  }

  /** Readiness check of Redis: it answers PING. */
  async pingRedis(): Promise<boolean> {
    return (await this.connection.ping()) === 'PONG';
  }

  /**
   * One tick: try to lead; as leader, claim due jobs in batches and enqueue their units in chunks
   * of one venue. Chunks overlap: while up to `enqueueDepth` chunks are being checked and added in
   * Redis, this process prepares the next one or claims the next batch, so the store, this process
   * and Redis work at the same time instead of taking turns. After a failed enqueue nothing more is
   * sent or claimed; the chunks already under way finish, and every claimed job that is not queued
   * has its lease freed.
   */
  async tick(): Promise<TickResult> {
    const end = this.metrics.tickSeconds.startTimer();
    const result: TickResult = { leader: false, claimed: 0, added: 0, duplicates: 0, requeued: 0 };
    const inflight: Array<Promise<void>> = [];
    let failure: { err: unknown } | undefined;
    try {
      result.leader = await this.election.tryLead();
      // Redis not answering: claims name no holder (their leases only expire), and the enqueue
      // that follows fails and frees them anyway.
      const current = result.leader ? await this.leaseHolder.current().catch(() => undefined) : undefined;
      if (current && this.staleLeasesDue) {
        await this.releaseStaleLeases(current.epoch);
        this.staleLeasesDue = false;
      }
      if (current) this.holders.add(current.holder);
      for (let batch = 0; result.leader && batch < this.maxBatchesPerTick && !failure; batch++) {
        const now = this.clock.now();
        const jobs = await this.store.jobs.claimDue(now, this.batchSize, this.leaseMs, current?.holder);
        this.metrics.claimed.inc(jobs.length);
        result.claimed += jobs.length;
        const chunks = this.chunksOf(jobs);
        for (const [i, chunk] of chunks.entries()) {
          if (failure) {
            // Claimed but never sent: free them so the next tick (or leader) claims them at once.
            await this.release(chunks.slice(i).flat());
            break;
          }
          inflight.push(
            this.enqueue(chunk, now, result).catch((err: unknown) => {
              failure ??= { err };
            }),
          );
          if (inflight.length >= this.enqueueDepth) await inflight.shift();
        }
        // A partial batch means nothing else is due; a lost lead means another replica takes over.
        if (jobs.length < this.batchSize || !this.election.isLeader) break;
      }
    } finally {
      // Even when a claim threw: the chunks under way finish (or free their leases) first.
      await Promise.all(inflight);
      end();
      this.lastTickEndMs = this.clock.monotonic();
    }
    if (failure) throw failure.err;
    return result;
  }

  /**
   * Makes Redis hold what the store says is owed (the store is the source of truth; Redis may
   * have restarted without persistence). Live jobs need nothing here: their lease expires and
   * `claimDue` claims them again. Backfill chunks have no lease, so every pending chunk of a
   * pending/running backfill is enqueued with its deterministic id: a unit still queued or running
   * is left alone, a lost one is added, and one BullMQ finished without the chunk being recorded
   * (failed as stalled, or its failure could not be stored) is replaced. Chunks of a backfill
   * created less than `repairGraceMs` ago are left to the command still enqueueing them. A venue
   * queue whose global concurrency is gone gets the fleet-wide AIMD value back (capped by the
   * connector).
   */
  async repair(): Promise<RepairResult> {
    const result: RepairResult = { owed: 0, recreated: 0, concurrency: [] };
    for (const connector of await this.store.connectors.list()) {
      if (!STATUS_EFFECTS[connector.status].servesQueue) continue;
      if ((await this.queues.globalConcurrency(connector.venue)) !== null) continue;
      this.control.configure(connector.venue, aimdLimitsFor(connector));
      const value = Math.min(await this.control.concurrency(connector.venue), connector.maxInflight);
      await this.queues.setGlobalConcurrency(connector.venue, value);
      result.concurrency.push({ venue: connector.venue, value });
    }
    const priorities = new Map<string, number | undefined>();
    // A backfill younger than the grace is still being enqueued by the command that created it.
    const createdBefore = this.clock.now() - this.repairGraceMs;
    let after: { backfillId: string; fromMs: number } | undefined;
    for (;;) {
      const owed = await this.store.backfills.owedChunks({ limit: this.repairBatch, createdBefore, ...(after ? { after } : {}) });
      if (owed.length === 0) break;
      const last = owed[owed.length - 1]!;
      after = { backfillId: last.backfillId, fromMs: last.fromMs };
      result.owed += owed.length;
      const now = this.clock.now();
      const units: QueuedUnit[] = [];
      for (const chunk of owed) {
        if (!priorities.has(chunk.jobId)) priorities.set(chunk.jobId, (await this.store.jobs.get(chunk.jobId))?.priority);
        const priority = priorities.get(chunk.jobId);
        units.push({
          kind: 'backfill',
          venue: parseJobId(chunk.jobId).venue,
          jobId: chunk.jobId,
          backfillId: chunk.backfillId,
          fromMs: chunk.fromMs,
          toMs: chunk.toMs,
          ...(chunk.index >= 0 ? { chunkIndex: chunk.index } : {}),
          ...(priority === undefined ? {} : { priority }),
          enqueuedAt: now,
        });
      }
      const outcomes = await this.queues.enqueue(units);
      // A unit that finished after the chunk list was read may have stored its chunk meanwhile
      // (a chunk is recorded before its unit completes or fails): replace a finished unit only
      // when the store, read now, still owes its chunk.
      const finishedIds = new Set(outcomes.filter((o) => o.outcome === 'duplicate' && o.existing !== 'queued').map((o) => o.id));
      const finished = units.filter((u) => finishedIds.has(unitJobId(u)));
      const stillOwed = await this.stillOwed(finished);
      const replaced = stillOwed.length > 0 ? await this.queues.enqueue(stillOwed, { replaceFinished: true }) : [];
      for (const o of [...outcomes, ...replaced]) {
        if (o.outcome === 'duplicate') continue;
        result.recreated += 1;
        this.metrics.unitsEnqueued.inc({ venue: o.venue });
        this.metrics.requeued.inc({ venue: o.venue });
      }
      if (owed.length < this.repairBatch || !this.election.isLeader) break;
    }
    if (result.recreated > 0) {
      this.logger.warn(
        { owedChunks: result.owed, recreatedUnits: result.recreated, concurrency: result.concurrency },
        'repaired the queues from the store: units of owed backfill chunks were missing in Redis',
      );
    } else if (result.concurrency.length > 0) {
      // Also the normal case on a fresh Redis before any worker has started.
      this.logger.info({ concurrency: result.concurrency }, 'set the missing global concurrency of venue queues');
    }
    return result;
  }

  private async stillOwed(units: QueuedUnit[]): Promise<QueuedUnit[]> {
    const pendingByBackfill = new Map<string, Set<number>>();
    const out: QueuedUnit[] = [];
    for (const u of units) {
      const id = u.backfillId!;
      let pending = pendingByBackfill.get(id);
      if (!pending) {
        const backfill = await this.store.backfills.get(id);
        const open = backfill?.status === 'pending' || backfill?.status === 'running';
        pending = new Set(open ? (await this.store.backfills.chunks(id, { status: 'pending' })).map((c) => c.fromMs) : []);
        pendingByBackfill.set(id, pending);
      }
      if (pending.has(u.fromMs!)) out.push(u);
    }
    return out;
  }

  /** Venues whose books a book loop polls (connector `bookLoop`), read at most every `bookLoopVenuesTtlMs`. */
  private async bookLoopVenues(): Promise<Set<string>> {
    const now = this.clock.monotonic();
    if (!this.loopVenues || now - this.loopVenues.atMs >= SCHEDULER_DEFAULTS.bookLoopVenuesTtlMs) {
      const connectors = await this.store.connectors.list();
      this.loopVenues = { atMs: now, venues: new Set(connectors.filter((c) => c.bookLoop).map((c) => c.venue)) };
    }
    return this.loopVenues.venues;
  }

  /** The unit one run of `job` claimed at `nowMs` becomes. */
  unitFor(job: Job, nowMs: number): QueuedUnit {
    const kind = unitKindFor(job.type);
    const unit: QueuedUnit = {
      kind,
      venue: job.venue,
      jobId: job.id,
      dueAt: job.nextRunAt,
      nextRunAt: nextRunAt(job, nowMs, this.cadence),
      priority: job.priority,
      enqueuedAt: nowMs,
    };
    if (kind === 'daily-files') Object.assign(unit, dailyFilesRange(nowMs, this.cadence));
    return unit;
  }

  /**
   * The units a claimed chunk of jobs becomes: one per job (several for an option-chain job over a
   * universe: {@link jobUnits}), except per-day jobs (Alpaca day and
   * minute bars, Polygon day bars), which are grouped by timeframe and the session day they owe next
   * into one unit per day over up to the venue's symbols per unit (Alpaca: all of them, so one
   * request serves many jobs; Polygon: 3, so a unit's duration stays bounded). A
   * per-day job whose next day is not final yet gets no unit: its lease is freed with the time the
   * day becomes final as its next due time (end-of-day gating). A universe job of a venue whose
   * units hold fewer symbols than a universe may (Polygon) gets a unit of its own per claim, one
   * slice of its day: {@link universeSlice}.
   */
  async unitsFor(jobs: Job[], nowMs: number): Promise<QueuedUnit[]> {
    const units: QueuedUnit[] = [];
    const days = new Map<string, { jobs: Job[]; dayStartMs: number; nextRunAt: number; perUnit: number }>();
    const notYet: Array<Promise<void>> = [];
    const loopVenues = jobs.some((j) => j.type === 'book') ? await this.bookLoopVenues() : new Set<string>();
    for (const job of jobs) {
      if (job.type === 'book' && loopVenues.has(job.venue)) {
        // polled by the venue's book loop, not by units
        const recheckAt = nowMs + SCHEDULER_DEFAULTS.bookLoopRecheckMs;
        notYet.push(this.store.jobs.release(job.id, recheckAt).catch((err: unknown) => this.logger.debug({ err, jobId: job.id }, 'could not release a job')));
        continue;
      }
      const perDay = sessionDayVenueOf(job);
      if (!perDay || !job.timeframe) {
        units.push(...(await this.jobUnits(job, nowMs)));
        continue;
      }
      const session = nextSessionDay(job, nowMs, this.sessionDayStarts);
      const finalAt = sessionDayFinalAt(job.timeframe, session, perDay) + this.cadence.closeDelayMs;
      if (finalAt > nowMs) {
        notYet.push(this.store.jobs.release(job.id, finalAt).catch((err: unknown) => this.logger.debug({ err, jobId: job.id }, 'could not release a job')));
        continue;
      }
      // the jobs owe the next session at once when it is final already (a catch-up), else when it will be
      const nextRunAt = Math.max(nowMs, sessionDayFinalAt(job.timeframe, sessionAfter(session), perDay) + this.cadence.closeDelayMs);
      const perUnit = this.symbolsPerUnit[job.venue] ?? perDay.symbolsPerUnit;
      if (universeOf(job.symbol) !== null && perUnit < MAX_UNIVERSE_SYMBOLS) {
        units.push(await this.universeSlice(job, session.dayStartMs, perUnit, nextRunAt, nowMs));
        continue;
      }
      const key = `${job.venue}|${job.timeframe}|${session.dayStartMs}`;
      let group = days.get(key);
      if (!group) {
        group = { jobs: [], dayStartMs: session.dayStartMs, nextRunAt, perUnit };
        days.set(key, group);
      }
      group.jobs.push(job);
    }
    for (const group of days.values()) {
      for (let i = 0; i < group.jobs.length; i += group.perUnit) {
        const part = group.jobs.slice(i, i + group.perUnit);
        units.push({
          kind: 'session-day',
          venue: part[0]!.venue,
          jobId: part[0]!.id,
          // The claim handed the unit lock of the job the unit locks to this due time.
          dueAt: part[0]!.nextRunAt,
          jobIds: part.map((j) => j.id),
          fromMs: group.dayStartMs,
          toMs: group.dayStartMs + 86_400_000,
          nextRunAt: group.nextRunAt,
          priority: Math.max(...part.map((j) => j.priority)),
          enqueuedAt: nowMs,
        });
      }
    }
    await Promise.all(notYet);
    return units;
  }

  /**
   * The next slice of a per-day universe job's day (Polygon day bars over `@<name>`: one request per
   * symbol, so a unit over a 500-member universe would run for hours at the venue's limit): the
   * first `perUnit` members, in sorted order, after the job's member cursor, as the universe holds
   * them now. Slices of one job run one after the other: each completes the job due at once, and the
   * next claim plans the next slice from the member cursor the worker moved; the day's last slice
   * moves the cursor past the day and takes the day's `nextRunAt`. So the cursor passes a day only
   * once every slice of it is stored, and a member added or removed during a day counts from the
   * next slice planned (one sorting before the member cursor waits for the next day).
   */
  private async universeSlice(job: Job, dayStartMs: number, perUnit: number, nextRunAt: number, nowMs: number): Promise<QueuedUnit> {
    const unit: QueuedUnit = {
      kind: 'session-day',
      venue: job.venue,
      jobId: job.id,
      dueAt: job.nextRunAt,
      jobIds: [job.id],
      fromMs: dayStartMs,
      toMs: dayStartMs + 86_400_000,
      nextRunAt,
      priority: job.priority,
      enqueuedAt: nowMs,
    };
    const members = (await this.store.universes.get(job.venue, universeOf(job.symbol)!))?.symbols;
    // A universe that is gone still gets a unit (without members): its run fails naming the universe, visible on the job.
    if (!members) return unit;
    const sorted = [...members].sort();
    const after = job.memberCursor;
    const rest = after === null ? sorted : sorted.filter((s) => s > after);
    if (rest.length > perUnit) return { ...unit, members: rest.slice(0, perUnit), lastSlice: false, nextRunAt: nowMs };
    // The day's last slice; when members were removed and none is left after the member cursor it
    // names the last ones again, which the worker finds stored already and only closes the day.
    return { ...unit, members: rest.length > 0 ? rest : sorted.slice(-perUnit), lastSlice: true };
  }

  /**
   * The units one run of `job` becomes: one, except for an option-chain job over a universe, which
   * becomes one unit per underlier of this cycle: the next `perCycle` round-robin slots from the
   * job's cursor (the slot after the last one a unit collected), at most one per member; the last
   * one ends the job's run (`endsRun`), so the next cycle is planned after this one. The
   * workers move the cursor, so it lives in the store and a restarted scheduler continues where
   * the last cycle stopped; slot and due time are in the unit ids, so claiming the job again
   * before its units ran adds none twice.
   */
  private async jobUnits(job: Job, nowMs: number): Promise<QueuedUnit[]> {
    const unit = this.unitFor(job, nowMs);
    const universe = universeOf(job.symbol);
    if (unit.kind !== 'option-chain' || universe === null) return [unit];
    const size = (await this.store.universes.get(job.venue, universe))?.symbols.length;
    // A universe that is gone still gets a unit: its run fails naming the universe, visible on the job.
    const count = Math.min(job.perCycle ?? DEFAULT_UNIVERSE_PER_CYCLE, size ?? 1);
    const first = job.cursor ?? 0;
    return Array.from({ length: count }, (_, i) => ({ ...unit, slot: first + i, endsRun: i === count - 1 }));
  }

  private async enqueue(jobs: Job[], now: number, result: TickResult): Promise<void> {
    let outcomes;
    try {
      outcomes = await this.queues.enqueue(await this.unitsFor(jobs, now), { replaceFinished: true });
    } catch (err) {
      // The units may not be queued: free the leases so the next tick (or leader) claims them
      // again at once rather than after leaseMs. Ids are deterministic, so any unit that did
      // make it into a queue is not added twice.
      await this.release(jobs);
      throw err;
    }
    // Counted per venue, then added to the metrics once per venue: a batch holds thousands of units.
    const enqueued = new Map<string, number>();
    const duplicates = new Map<string, number>();
    const bump = (counts: Map<string, number>, venue: string): void => void counts.set(venue, (counts.get(venue) ?? 0) + 1);
    for (const o of outcomes) {
      if (o.outcome === 'added') {
        bump(enqueued, o.venue);
        result.added += 1;
      } else if (o.outcome === 'requeued') {
        bump(enqueued, o.venue);
        this.metrics.requeued.inc({ venue: o.venue });
        result.requeued += 1;
        this.logger.warn({ unitId: o.id, venue: o.venue, state: o.existing }, 'unit finished without updating its job; enqueued again');
      } else {
        bump(duplicates, o.venue);
        result.duplicates += 1;
        this.logger.debug({ unitId: o.id, venue: o.venue, state: o.existing }, 'unit already queued');
      }
    }
    for (const [venue, n] of enqueued) this.metrics.unitsEnqueued.inc({ venue }, n);
    for (const [venue, n] of duplicates) this.metrics.duplicateEnqueues.inc({ venue }, n);
    this.logger.debug({ claimed: jobs.length, added: result.added }, 'enqueued due jobs');
  }

  /**
   * A claimed batch as enqueue chunks: one venue each (so one lookup script and one `addBulk` per
   * chunk), at most `enqueueChunk` jobs, in claim order per venue.
   */
  private chunksOf(jobs: Job[]): Job[][] {
    const byVenue = new Map<string, Job[]>();
    for (const job of jobs) {
      const list = byVenue.get(job.venue);
      if (list) list.push(job);
      else byVenue.set(job.venue, [job]);
    }
    const chunks: Job[][] = [];
    for (const list of byVenue.values()) {
      for (let i = 0; i < list.length; i += this.enqueueChunk) chunks.push(list.slice(i, i + this.enqueueChunk));
    }
    return chunks;
  }

  /**
   * A new leader ends the leases claimed for another Redis epoch: their units went to queues this
   * Redis does not hold (a restarted `tickfleet up`, a Redis restarted without persistence), so
   * nothing will end them before they expire. Leases of this epoch stay: their units may be queued
   * or running here. Unit locks stay too, so a run still under way keeps its job.
   */
  private async releaseStaleLeases(epoch: string): Promise<void> {
    const stale = new Set<string>();
    for (const { holder } of await this.store.jobs.leases(this.clock.now())) {
      if (holder !== null && LeaseHolder.epochOf(holder) !== epoch) stale.add(holder);
    }
    for (const holder of stale) {
      const released = await this.store.jobs.releaseLeases(holder);
      this.logger.info({ holder, released }, 'released the leases of claims whose units went to another Redis');
    }
  }

  /** On stop: ends the leases this scheduler's claims took (best effort: a lease that stays expires). */
  private async releaseOwnLeases(): Promise<void> {
    for (const holder of this.holders) {
      try {
        const released = await this.store.jobs.releaseLeases(holder);
        this.holders.delete(holder);
        if (released > 0) this.logger.info({ released }, 'released the leases of this scheduler’s claims');
      } catch (err) {
        this.logger.warn({ err }, 'could not release the leases of this scheduler’s claims; they expire on their own');
      }
    }
  }

  /** Frees the leases of claimed jobs whose units may not be queued (best effort: a lease that stays expires). */
  private async release(jobs: Job[]): Promise<void> {
    await Promise.allSettled(jobs.map((job) => this.store.jobs.release(job.id)));
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const started = this.clock.monotonic();
      try {
        const { leader } = await this.tick();
        const nowMono = this.clock.monotonic();
        if (leader && this.election.isLeader && (this.lastRepairMs === undefined || nowMono - this.lastRepairMs >= this.repairEveryMs)) {
          await this.repair();
          this.lastRepairMs = nowMono;
        }
      } catch (err) {
        this.metrics.tickErrors.inc();
        this.logger.error({ err }, 'tick failed');
      }
      const waitMs = Math.max(0, this.tickMs - (this.clock.monotonic() - started));
      if (!this.running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }
}
