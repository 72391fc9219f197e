import { hostname } from 'node:os';
import { type Clock, type Connector, type ConnectorStatus, formatDurationMs, systemClock } from '@tickfleet/core';
import {
  aimdLimitsFor,
  BudgetGate,
  FleetVenueControl,
  type FleetVenueControlOptions,
  FreezeWatch,
  type VenueFreeze,
  type VenueHealth,
  ScopedBudgets,
  startConcurrency,
  STATUS_EFFECTS,
  statusSends,
  StoreOutageFallback,
  WorkerHeartbeat,
} from '@tickfleet/budget';
import { createRedisConnection, QUEUE_PREFIX, VenueQueues, type RedisClient } from '@tickfleet/queues';
import { GapLedger, type Pipeline } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import { StreamLeases, StreamMetrics, StreamRunner, type StreamEndpoints, type StreamHealth } from '@tickfleet/streams';
import { rateLimitedLog, type Logger, type Registry } from '@tickfleet/telemetry';
import { hasVenueAdapter } from '@tickfleet/venues';
import { ActiveSets } from './active-set.js';
import { BookLoop, bookShareName, parseBookShareName } from './book-loop.js';
import { UnitExecutor } from './unit-executor.js';
import { VenueRunner } from './venue-runner.js';
import { UnitLocks } from './unit-locks.js';
import { WorkerMetrics } from './worker-metrics.js';
import { WORKER_DEFAULTS } from './worker-defaults.js';

export interface FleetWorkerOptions {
  redisUrl: string;
  store: StateStore;
  pipeline: Pipeline;
  logger: Logger;
  registry: Registry;
  /** Identity in the per-venue live-worker set (default `<hostname>-<pid>`). */
  workerId?: string;
  /** Venues to serve; default every connector with an adapter. */
  venues?: readonly string[];
  /** @defaultValue QUEUE_PREFIX */
  prefix?: string;
  clock?: Clock;
  /** The fleet's clock, which venue control keeps its times on (`FleetVenueControlOptions.serverClock`). @defaultValue the Redis server's `TIME` on the system clock, else `clock` */
  serverClock?: FleetVenueControlOptions['serverClock'];
  /** @defaultValue {@link WORKER_DEFAULTS.heartbeatMs} */
  heartbeatMs?: number;
  /** How often connectors are re-read (new venues, cap changes). @defaultValue {@link WORKER_DEFAULTS.connectorPollMs} */
  connectorPollMs?: number;
  /** Extra adapter options per venue (`{ polygon: { apiKey } }`): a venue's runner gets only its own. */
  adapterOptions?: Readonly<Record<string, Record<string, unknown>>>;
  /** BullMQ unit lock and stalled-check settings (tests shorten them). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  initialLookbackMs?: number;
  /** Interval of the per-venue order-book poll statistics (`poll_stats` records and gauges). @defaultValue {@link WORKER_DEFAULTS.pollStatsMs} */
  pollStatsMs?: number;
  /** Lease TTL of book poll loop shares (a dead worker's shares move within it). @defaultValue {@link WORKER_DEFAULTS.bookLoopLeaseTtlMs} */
  bookLoopLeaseTtlMs?: number;
  /** Hold streams (docs/streams-fleet.md) beside units; absent: this worker runs units only. */
  streams?: { endpoints: StreamEndpoints; leaseTtlMs?: number; pollMs?: number; silenceTimeoutMs?: number };
}

/** What the fleet's Redis and the budget store say about a served venue, as `/healthz` reports it (null: not read). */
interface VenueSharedState {
  /** The fleet-wide AIMD concurrency. */
  concurrency: number | null;
  health: VenueHealth | null;
  freeze: VenueFreeze | null;
  budget: { used: number; limit: number } | null;
  /** What could not be read, and why (never an error's message: it may quote a URL). */
  unread: string[];
}

/** One served venue in `/healthz`: this worker's share and units, and the venue's fleet-wide state. */
export interface VenueHealthz extends Omit<VenueSharedState, 'unread'> {
  venue: string;
  status: ConnectorStatus;
  cap: number;
  localConcurrency: number;
  inflight: number;
  unread?: string[];
}

/**
 * A worker process: one VenueRunner per served venue, sharing one RedisClient connection, the state
 * store, the sink pipeline and the budget gate. New connectors are picked up without a restart.
 */
export class FleetWorker {
  readonly metrics: WorkerMetrics;
  private readonly runners = new Map<string, VenueRunner>();
  private readonly clock: Clock;
  private readonly prefix: string;
  private connection: RedisClient | undefined;
  private queues: VenueQueues | undefined;
  private control: FleetVenueControl | undefined;
  private fallback: StoreOutageFallback | undefined;
  private gate: BudgetGate | undefined;
  private freezeWatch: FreezeWatch | undefined;
  private executor: UnitExecutor | undefined;
  private unitLocks: UnitLocks | undefined;
  private timers: NodeJS.Timeout[] = [];
  private activeSets: ActiveSets | undefined;
  private readonly workerId: string;
  /** Start of the current poll-statistics interval. */
  private pollStatsFromMs = 0;
  private stopping = false;
  private refreshing: Promise<void> | undefined;
  private streamRunner: StreamRunner | undefined;
  /** Leases of the book poll loops' shares (group `bookloop`), created with the first loop. */
  private bookLeases: StreamLeases | undefined;
  private readonly bookLoops = new Map<string, BookLoop>();
  private bookShareNames = '';
  private bookShareVersion = 0;
  /** The last read of the served venues' shared state for `/healthz`, reused for `healthzCacheMs`. */
  private shared: { atMs: number; value: Promise<Map<string, VenueSharedState>> } | undefined;

  constructor(private readonly options: FleetWorkerOptions) {
    this.clock = options.clock ?? systemClock;
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.metrics = new WorkerMetrics(options.registry);
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}`;
  }

  /** The streams this worker holds now (empty when it runs no streams). */
  streamHealth(): StreamHealth[] {
    return this.streamRunner?.health() ?? [];
  }

  get venues(): string[] {
    return [...this.runners.keys()];
  }

  /**
   * Per served venue: the connector's cap, this worker's share of it (its BullMQ local
   * concurrency, `ceil(cap / live workers)`) and the units it runs now (reported in `/healthz`).
   */
  venueShares(): Array<{ venue: string; cap: number; localConcurrency: number; inflight: number }> {
    return [...this.runners.values()].map((r) => ({ venue: r.venue, cap: r.cap, localConcurrency: r.localConcurrency(), inflight: r.inflightUnits }));
  }

  /**
   * Per served venue, what `/healthz` reports: the connector's status, cap, this worker's share
   * and in-flight units (in memory), and the venue's health (state, reason, last error's cause,
   * time and message), freeze, AIMD concurrency and budget used/limit, read from Redis (one hash
   * slot per venue, its reads sent together) and the budget store at most once per
   * `healthzCacheMs` however often it is polled. A read that does not answer within
   * `healthzReadTimeoutMs` leaves its fields null and names itself in `unread`: a liveness probe
   * never waits on Redis or the store.
   */
  async venueHealthz(): Promise<VenueHealthz[]> {
    const now = this.clock.monotonic();
    if (!this.shared || now - this.shared.atMs >= WORKER_DEFAULTS.healthzCacheMs) this.shared = { atMs: now, value: this.readShared() };
    const shared = await this.shared.value;
    return this.venueShares().map((share) => {
      const runner = this.runners.get(share.venue)!;
      const { unread, ...state } = shared.get(share.venue) ?? { concurrency: null, health: null, freeze: null, budget: null, unread: ['not read yet'] };
      return { ...share, status: runner.status, ...state, ...(unread.length > 0 ? { unread } : {}) };
    });
  }

  private async readShared(): Promise<Map<string, VenueSharedState>> {
    const control = this.control;
    const timeoutMs = WORKER_DEFAULTS.healthzReadTimeoutMs;
    const entries = await Promise.all(
      [...this.runners.values()].map(async (runner): Promise<[string, VenueSharedState]> => {
        const venue = runner.venue;
        const unread: string[] = [];
        const [fromRedis, usage] = await Promise.all([
          within(control ? Promise.all([control.health(venue, runner.status), control.snapshot(venue)]) : null, timeoutMs, 'redis', unread),
          within(this.options.store.budgets.usage(venue), timeoutMs, 'budget store', unread),
        ]);
        const [health, snapshot] = fromRedis ?? [null, null];
        const budget = usage ? { used: usage.used, limit: usage.limit } : null;
        return [venue, { concurrency: snapshot?.concurrency ?? null, health, freeze: snapshot?.frozen ?? null, budget, unread }];
      }),
    );
    return new Map(entries);
  }

  async start(): Promise<void> {
    const { options } = this;
    const connection = createRedisConnection(options.redisUrl, { connectionName: `tickfleet-worker-${process.pid}` });
    this.connection = connection;
    this.queues = new VenueQueues(connection, { prefix: this.prefix });
    this.control = new FleetVenueControl(connection, {
      prefix: this.prefix,
      clock: this.clock,
      ...(options.serverClock === undefined ? {} : { serverClock: options.serverClock }),
    });
    const liveness = new WorkerHeartbeat(connection, this.workerId, { prefix: this.prefix, timeline: this.control.timeline });
    this.activeSets = new ActiveSets(connection, this.prefix, () => this.clock.monotonic());
    this.fallback = new StoreOutageFallback(liveness, { clock: this.clock });
    this.unitLocks = new UnitLocks(options.store, () => this.clock.now());
    const reader = options.pipeline.sink.reader;
    this.executor = new UnitExecutor({
      store: options.store,
      pipeline: options.pipeline,
      clock: this.clock,
      metrics: this.metrics,
      activeSets: this.activeSets,
      ...(reader ? { gapLedger: new GapLedger(options.store, reader, { clock: this.clock, spooled: options.pipeline, logger: options.logger }) } : {}),
      ...(options.initialLookbackMs !== undefined ? { initialLookbackMs: options.initialLookbackMs } : {}),
    });
    // The freeze mark every request checks, kept between announced changes (one subscriber
    // connection) instead of read from Redis before each request.
    this.freezeWatch = new FreezeWatch(this.control, connection.duplicate(), { prefix: this.prefix, clock: this.clock });
    await this.freezeWatch.start();
    this.gate = new BudgetGate({
      budgets: options.store.budgets,
      clock: this.clock,
      metrics: this.metrics,
      freezes: this.freezeWatch,
      fallback: this.fallback,
      // Xetra's markets each have a budget of their own, in the fleet Redis next to the venue's freeze.
      scopes: new ScopedBudgets(connection, { connectors: options.store.connectors, prefix: this.prefix, clock: this.clock }),
      logger: options.logger,
    });
    await this.refreshConnectors();
    if (options.streams) {
      this.streamRunner = new StreamRunner({
        connection,
        prefix: this.prefix,
        workerId: this.workerId,
        store: options.store,
        pipeline: options.pipeline,
        gate: this.gate,
        logger: options.logger,
        metrics: new StreamMetrics(options.registry),
        clock: this.clock,
        ...options.streams,
        ...(options.venues ? { venues: options.venues } : {}),
      });
      await this.streamRunner.start();
    }
    const refreshLog = rateLimitedLog(options.logger, 60_000);
    this.timers.push(
      // During a store outage every poll fails: one line per cause per minute, not one per poll.
      setInterval(
        () =>
          void this.refreshConnectors().catch((err: unknown) =>
            refreshLog('warn', (err as { code?: string }).code ?? 'error', { err }, 'connector refresh failed'),
          ),
        options.connectorPollMs ?? WORKER_DEFAULTS.connectorPollMs,
      ),
      setInterval(
        () => void this.heartbeat().catch((err: unknown) => options.logger.error({ err }, 'heartbeat failed')),
        options.heartbeatMs ?? WORKER_DEFAULTS.heartbeatMs,
      ),
      setInterval(
        () => void this.flushPollStats().catch((err: unknown) => refreshLog('warn', 'poll-stats', { err }, 'could not store poll statistics')),
        options.pollStatsMs ?? WORKER_DEFAULTS.pollStatsMs,
      ),
    );
    this.pollStatsFromMs = this.clock.now();
    for (const t of this.timers) t.unref();
    options.logger.info({ venues: this.venues }, 'worker started');
  }

  /** Starts runners for new served venues and applies connector changes to running ones. */
  refreshConnectors(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    if (this.stopping) return;
    const connectors = await this.options.store.connectors.list();
    for (const connector of connectors) {
      if (!this.serves(connector)) continue;
      // A paused or disabled venue sends nothing more, not even what this worker leased before.
      if (!statusSends(connector.status)) this.gate?.dropLease(connector.venue);
      const runner = this.runners.get(connector.venue);
      // The beat also tells a restarted fleet (no worker for the venue for aimd.restartAfterMs)
      // apart from one worker restarting: only the former sets the AIMD concurrency back.
      const aimd = aimdLimitsFor(connector);
      const liveWorkers = await this.fallback!.configure(connector.venue, { afterMs: aimd.restartAfterMs, startConcurrency: startConcurrency(aimd) });
      if (runner) {
        runner.update(connector, liveWorkers);
        continue;
      }
      if (!STATUS_EFFECTS[connector.status].servesQueue) continue;
      const created = this.createRunner(connector);
      this.runners.set(connector.venue, created);
      await created.start(liveWorkers);
      this.options.logger.info({ venue: connector.venue, maxInflight: connector.maxInflight }, 'serving venue');
    }
    await this.syncBookLoops(connectors);
  }

  /**
   * Starts, updates and stops the venues' book poll loops as their connectors ask (`bookLoop`), and
   * sets the shares this worker competes for: every share of every loop it serves.
   */
  private async syncBookLoops(connectors: readonly Connector[]): Promise<void> {
    const wanted = new Map<string, Connector>();
    for (const c of connectors) {
      if (c.bookLoop && this.runners.has(c.venue) && STATUS_EFFECTS[c.status].servesQueue) wanted.set(c.venue, c);
    }
    for (const [venue, loop] of this.bookLoops) {
      if (wanted.has(venue)) continue;
      this.bookLoops.delete(venue);
      this.runners.get(venue)?.attachBookLoop(undefined);
      await loop.stop();
    }
    if (wanted.size === 0 && !this.bookLeases) return;
    this.bookLeases ??= this.createBookLeases();
    for (const [venue, connector] of wanted) {
      const existing = this.bookLoops.get(venue);
      if (existing) {
        existing.update(connector.bookLoop!);
        continue;
      }
      const runner = this.runners.get(venue)!;
      const leases = this.bookLeases;
      const loop = new BookLoop({
        venue,
        settings: connector.bookLoop!,
        host: runner.bookLoopHost(),
        isHeld: (name, token) => leases.isHeld(name, token),
        redis: this.connection!,
        prefix: this.prefix,
        control: this.control!,
        activeSets: this.activeSets!,
        pipeline: this.options.pipeline,
        store: this.options.store,
        clock: this.clock,
        logger: this.options.logger,
        workerId: this.workerId,
        backoff: {},
      });
      this.bookLoops.set(venue, loop);
      runner.attachBookLoop(loop);
      loop.start();
      this.options.logger.info({ venue, ...connector.bookLoop }, 'polling books by the loop');
    }
    const names = [...wanted.values()].flatMap((c) => Array.from({ length: c.bookLoop!.shares }, (_, i) => bookShareName(c.venue, i)));
    const key = names.join(',');
    if (key !== this.bookShareNames) {
      this.bookShareNames = key;
      this.bookLeases.setStreams(names, ++this.bookShareVersion);
      this.bookLeases.start();
      // take shares now rather than at the first timed renewal
      await this.bookLeases.tick().catch((err: unknown) => this.options.logger.warn({ err }, 'book loop lease cycle failed'));
    }
  }

  private createBookLeases(): StreamLeases {
    const refreshLog = rateLimitedLog(this.options.logger, 60_000);
    return new StreamLeases(this.connection!, this.workerId, {
      prefix: this.prefix,
      group: 'bookloop',
      ttlMs: this.options.bookLoopLeaseTtlMs ?? WORKER_DEFAULTS.bookLoopLeaseTtlMs,
      clock: this.clock,
      onAcquired: (name, token) => {
        const s = parseBookShareName(name);
        if (s) this.bookLoops.get(s.venue)?.addShare(s.share, token);
      },
      onLost: (name, reason) => {
        const s = parseBookShareName(name);
        if (s) this.bookLoops.get(s.venue)?.removeShare(s.share, reason);
      },
      onError: (err) => refreshLog('warn', 'book-leases', { err }, 'book loop lease cycle failed'),
    });
  }

  private serves(connector: Connector): boolean {
    if (this.options.venues && !this.options.venues.includes(connector.venue)) return false;
    if (!hasVenueAdapter(connector.venue)) {
      if (this.options.venues) this.options.logger.warn({ venue: connector.venue }, 'no adapter for this venue; not serving it');
      return false;
    }
    return true;
  }

  private createRunner(connector: Connector): VenueRunner {
    return new VenueRunner({
      connector,
      connection: this.connection!,
      prefix: this.prefix,
      queues: this.queues!,
      control: this.control!,
      store: this.options.store,
      executor: this.executor!,
      gate: this.gate!,
      unitLocks: this.unitLocks!,
      metrics: this.metrics,
      logger: this.options.logger,
      clock: this.clock,
      activeSets: this.activeSets!,
      workerId: this.workerId,
      ...(this.options.adapterOptions?.[connector.venue] ? { adapterOptions: this.options.adapterOptions[connector.venue] } : {}),
      ...(this.options.lockDurationMs !== undefined ? { lockDurationMs: this.options.lockDurationMs } : {}),
      ...(this.options.stalledIntervalMs !== undefined ? { stalledIntervalMs: this.options.stalledIntervalMs } : {}),
    });
  }

  /**
   * Ends the current poll-statistics interval of every served venue and stores its `poll_stats`
   * record and sampled `poll_errors` through the sink pipeline (the spool, if the sink is down).
   * Also called on stop, so the last partial interval is kept.
   */
  async flushPollStats(): Promise<void> {
    const fromMs = this.pollStatsFromMs;
    const toMs = this.clock.now();
    this.pollStatsFromMs = toMs;
    const envelopes = [...this.runners.values()].flatMap((r) => r.flushPollStats(fromMs, toMs));
    if (envelopes.length > 0) await this.options.pipeline.pushValidated(envelopes);
  }

  /** One log line per venue: in-flight, cap and this worker's share of it, counters, freeze and budget remaining. */
  async heartbeat(): Promise<void> {
    for (const runner of this.runners.values()) {
      const venue = runner.venue;
      const [freezeMs, usage, concurrency] = await Promise.all([
        this.control!.frozenForMs(venue),
        this.options.store.budgets.usage(venue).catch(() => null),
        this.control!.concurrency(venue),
      ]);
      this.metrics.freezeSeconds.set({ venue }, freezeMs / 1000);
      this.metrics.concurrency.set({ venue }, concurrency);
      this.options.logger.info(
        {
          venue,
          inflight: runner.inflightUnits,
          cap: runner.cap,
          localConcurrency: runner.localConcurrency(),
          concurrency,
          ...runner.counters,
          freezeRemaining: formatDurationMs(freezeMs),
          budgetRemaining: usage ? Math.max(0, usage.limit - usage.used) : null,
          budgetLimit: usage?.limit ?? null,
        },
        'venue heartbeat',
      );
    }
  }

  /**
   * Stops taking units and lets in-flight ones finish within `graceMs`; after that they are
   * abandoned to BullMQ's stalled-unit recovery (another worker picks them up) and their job
   * locks expire. Closes queues and the connection; the pipeline and store belong to the caller.
   */
  async stop(graceMs = 25_000): Promise<void> {
    this.stopping = true;
    // Streams first: their leases go to the other workers at once, and the sessions deliver what
    // they hold while the budget gate and the pipeline still work.
    await this.streamRunner?.stop();
    // shares released at once: the other workers take them at their next cycle, not after the TTL
    await Promise.all([...this.bookLoops.values()].map((l) => l.stop()));
    await this.bookLeases?.stop().catch((err: unknown) => this.options.logger.warn({ err }, 'could not release the book loop shares'));
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.refreshing?.catch(() => undefined);
    const runners = [...this.runners.values()];
    const graceful = Promise.all(runners.map((r) => r.stop(false)));
    const timedOut = await Promise.race([graceful.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) {
      this.options.logger.warn({ graceMs }, 'grace period over: returning in-flight units to the queue');
      await Promise.all(runners.map((r) => r.stop(true)));
      // A force-closed BullMQ worker does not wait for its processors; give the abandoned units a
      // moment to notice the shutdown signal before their Redis connection goes away under them.
      const settleBy = Date.now() + 2000;
      while (runners.some((r) => r.inflightUnits > 0) && Date.now() < settleBy) await new Promise((r) => setTimeout(r, 50));
    }
    this.unitLocks?.close();
    await this.fallback?.leave();
    await this.flushPollStats().catch((err: unknown) => this.options.logger.warn({ err }, 'could not store the last poll statistics'));
    this.runners.clear();
    await this.queues?.close();
    await this.freezeWatch?.stop();
    this.connection?.disconnect();
  }
}

/** `promise`'s value, or null when it fails or takes longer than `timeoutMs` (then `what` and why go to `unread`). */
async function within<T>(promise: Promise<T> | null, timeoutMs: number, what: string, unread: string[]): Promise<T | null> {
  if (promise === null) {
    unread.push(`${what}: not connected`);
    return null;
  }
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  const note = (why: string): null => {
    if (!settled) unread.push(`${what}: ${why}`);
    settled = true;
    return null;
  };
  const timedOut = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(note(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([promise.catch((err: unknown) => note(err instanceof Error ? err.name : 'error')), timedOut]);
  } finally {
    settled = true;
    clearTimeout(timer);
  }
}
