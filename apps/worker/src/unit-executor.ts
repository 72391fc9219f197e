import {
  alignDown,
  calendarFor,
  JobLockLostError,
  type Clock,
  type Envelope,
  type Job,
  jobId,
  lastClosedOpenTime,
  MalformedPayloadError,
  sessionDayCursor,
  SpoolFullError,
  StoreUnavailableError,
  timeframeMs,
  type Timeframe,
  TransientError,
  UnrecoverableError,
  universeKey,
  universeOf,
  usEquitySessions,
} from '@tickfleet/core';
import type { QueuedUnit } from '@tickfleet/queues';
import { SPOOL_DEFAULTS, withNeighbours, type GapLedger, type Pipeline } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import type { Logger } from '@tickfleet/telemetry';
import {
  isBookSource,
  isCandleSource,
  isFileSource,
  isMultiSymbolCandleSource,
  isOptionChainSource,
  isSeriesSource,
  isTradeSource,
  type TradesFrom,
  type VenueAdapter,
} from '@tickfleet/venues';
import { ACTIVE_SET_SNAPSHOT, type ActiveSet, type ActiveSets } from './active-set.js';
import { refreshActiveSet } from './instrument-lifecycle.js';
import type { WorkerMetrics } from './worker-metrics.js';
import { WORKER_DEFAULTS } from './worker-defaults.js';

export interface UnitContext {
  unit: QueuedUnit;
  /**
   * The venue's adapter. Every request it sends spends its weight from the venue's shared budget
   * first (the budget gate is attached to its requests in `VenueRunner.makeAdapter`), so a page
   * fetch may wait briefly, or end the unit with BudgetExhaustedError (the unit yields) or
   * RequestTooHeavyError (the unit fails for good).
   */
  adapter: VenueAdapter;
  signal: AbortSignal;
  /** The unit's job as its unit lock read it (then the executor does not read it again). */
  job?: Job;
  /**
   * Spends the unit's estimated request weight from the venue's budget before its first request
   * (at most the window's limit; fixed-window budgets only), waiting or yielding as a request would:
   * a unit refused by the budget is then refused before it sent anything, never midway, so a later
   * run does not send its first requests again. Its requests use the reservation while it lasts.
   */
  reserve?(weight: number): Promise<void>;
  /** Renews the unit's job lock and BullMQ lock; call between pages of long units. */
  heartbeat(): Promise<void>;
  /** Publishes how far a long unit is (BullMQ job progress: bull-board, `tickfleet units active`); never throws. */
  progress?(progress: UnitProgress): Promise<void>;
  logger: Logger;
}

/** How far a daily-files unit is: files of the day's listing done (stored by this or an earlier run), and what this run downloaded. */
export interface UnitProgress {
  files: number;
  filesTotal: number;
  /** Bytes downloaded by this run, as they came (compressed). */
  bytes: number;
  /** Records this run stored. */
  records: number;
}

export interface UnitOutcome {
  outcome: 'ok' | 'skipped';
  records: number;
  detail?: string;
  /**
   * The job's cursor after the run's last page, whose records are durable but which the executor
   * did not store: the runner stores it with the job's completion (one statement instead of two
   * per live unit), or by itself when the unit does not complete the job.
   */
  cursor?: number;
}

export interface UnitExecutorOptions {
  store: StateStore;
  pipeline: Pipeline;
  clock: Clock;
  metrics: WorkerMetrics;
  gapLedger?: GapLedger;
  /** How far back a candle job without `since` or cursor starts. @defaultValue {@link WORKER_DEFAULTS.initialLookbackMs} */
  initialLookbackMs?: number;
  /** Delay after a candle closes before collecting it (venues publish a close a moment later). @defaultValue {@link WORKER_DEFAULTS.closeDelayMs} */
  closeDelayMs?: number;
  /** The venues' active order-book sets (discovery swaps them, book polls read them). */
  activeSets: ActiveSets;
}

/** The least time between two progress writes of a long unit. */
const PROGRESS_EVERY_MS = 1000;
/** How far back a per-day unit's gap scan reaches: past a weekend and a holiday to the previous stored bar. */
const SCAN_BACK_MS = 5 * 86_400_000;
/**
 * Runs one unit of work against a venue adapter. Records reach the sink pipeline (durably: the
 * sink or the spool) before the job's cursor advances, and the cursor only moves forward, so a
 * crash between the two re-fetches a page that the idempotent sink absorbs.
 */
export class UnitExecutor {
  private readonly lookbackMs: number;
  /** The last copy of each job read from the store (one entry per job this worker ran). */
  private readonly lastJobs = new Map<string, Job>();
  /** Per venue: when a malformed payload was last logged, and how many were not logged since. */
  private readonly malformedSampled = new Map<string, { atMs: number; suppressed: number }>();

  constructor(private readonly options: UnitExecutorOptions) {
    this.lookbackMs = options.initialLookbackMs ?? WORKER_DEFAULTS.initialLookbackMs;
  }

  async run(ctx: UnitContext): Promise<UnitOutcome> {
    const { unit } = ctx;
    // a per-day unit serves many jobs: any of them may be gone, the others still run
    if (unit.kind === 'session-day') return this.sessionDay(ctx);
    const job = ctx.job ?? (await this.readJob(unit.jobId));
    if (ctx.job) this.lastJobs.set(ctx.job.id, ctx.job);
    if (!job) {
      // A backfill chunk whose job is gone can never be stored: end it as failed, not owed forever.
      if (unit.kind === 'backfill' && unit.backfillId && unit.fromMs !== undefined && unit.toMs !== undefined) {
        await this.options.store.backfills.chunkFailed(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs }, `job ${unit.jobId} no longer exists`);
      }
      return { outcome: 'skipped', records: 0, detail: 'job no longer exists' };
    }
    switch (unit.kind) {
      case 'incremental':
        if (!job.enabled) return { outcome: 'skipped', records: 0, detail: 'job disabled' };
        if (job.type === 'trades') return this.pollTrades(ctx, job);
        if (job.type !== 'ohlcv') throw new UnrecoverableError(job.venue, `job ${job.id}: ${job.type} jobs have no incremental collector`);
        return this.incremental(ctx, job);
      case 'backfill':
        return this.backfill(ctx, job);
      case 'book-poll':
        if (!job.enabled) return { outcome: 'skipped', records: 0, detail: 'job disabled' };
        return this.bookPoll(ctx, job);
      case 'discovery':
        return this.discovery(ctx, job);
      case 'daily-files':
        if (!job.enabled) return { outcome: 'skipped', records: 0, detail: 'job disabled' };
        return this.dailyFiles(ctx, job);
      case 'option-chain':
        if (!job.enabled) return { outcome: 'skipped', records: 0, detail: 'job disabled' };
        return this.optionChain(ctx, job);
      case 'series':
        if (!job.enabled) return { outcome: 'skipped', records: 0, detail: 'job disabled' };
        return this.series(ctx, job);
    }
  }

  /**
   * One underlier's option chain. A job over a universe reads the universe's members now (so an
   * edited universe changes what the next units collect) and takes member `slot % size`; then it
   * moves the job's round-robin cursor past the slot, which is where the scheduler plans the next
   * cycle from. An underlier the venue refuses for good (an unknown ticker) moves the cursor too,
   * so it cannot hold the rotation up.
   */
  private async optionChain(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal, unit } = ctx;
    if (!isOptionChainSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no option-chain source`);
    const universe = universeOf(job.symbol);
    let symbol = job.symbol;
    if (universe !== null) {
      const members = await this.options.store.universes.members(job.venue, universe).catch((err: unknown) => {
        if (err instanceof StoreUnavailableError) throw err;
        throw new UnrecoverableError(job.venue, `job ${job.id}: universe ${universeKey(job.venue, universe)} does not exist (tickfleet universes set …)`);
      });
      symbol = members[(unit.slot ?? 0) % members.length]!;
    }
    const advance = async (): Promise<void> => {
      if (unit.slot !== undefined) await this.options.store.jobs.advanceCursor(job.id, unit.slot + 1);
    };
    let snapshot;
    try {
      snapshot = await adapter.fetchOptionChain(symbol, { signal });
    } catch (err) {
      if (err instanceof UnrecoverableError) await advance();
      throw err;
    }
    await this.persist(ctx, snapshot.envelopes);
    await advance();
    return { outcome: 'ok', records: snapshot.envelopes.length, detail: `${symbol}: ${snapshot.contracts.length} contracts` };
  }

  /**
   * One trading day of bars for every job of the unit (same venue and timeframe): the symbols are
   * fetched in requests of up to the adapter's symbols per request (Alpaca: 100), each page
   * persisted as it arrives; once the whole day is durable, every job's cursor moves to the day's
   * last slot (see sessionDayCursor), so a re-run of the unit, or a crash before that, stores
   * nothing twice and loses nothing.
   */
  private async sessionDay(ctx: UnitContext): Promise<UnitOutcome> {
    const { unit, adapter, signal } = ctx;
    if (unit.fromMs === undefined || unit.toMs === undefined || !unit.jobIds) throw new TransientError(unit.venue, 'session-day unit without day or jobs');
    const jobs: Job[] = [];
    for (const id of unit.jobIds) {
      const job = await this.readJob(id);
      if (job?.enabled && job.timeframe) jobs.push(job);
    }
    const first = jobs[0];
    if (!first) return { outcome: 'skipped', records: 0, detail: 'no enabled job left' };
    const tf = requireTimeframe(first);
    const session = usEquitySessions(unit.fromMs, unit.fromMs + 1).find((s) => s.dayStartMs === unit.fromMs);
    if (!session) throw new UnrecoverableError(unit.venue, `session-day unit for ${new Date(unit.fromMs).toISOString()}, which starts no trading session`);
    const dayCursor = sessionDayCursor(tf, session);
    // a job whose cursor is at or past the day already holds it (the unit ran before)
    const owing = jobs.filter((j) => j.timeframe === tf && (j.cursor === null || j.cursor < dayCursor));
    // A slice of one universe job's day (Polygon) fetches the members the scheduler planned, less
    // those a run of it already stored (the member cursor moved past them). Otherwise a job over a
    // universe (`@name`) covers its members as they are now. Sorted, so the same symbols always
    // make the same batches (Alpaca answers them sorted too).
    const members = new Set<string>();
    /** Member series of universe jobs, each scanned by the gap ledger below. */
    const memberSeries = new Set<string>();
    const slice = unit.members;
    for (const job of owing) {
      const universe = universeOf(job.symbol);
      if (universe === null) {
        members.add(job.symbol);
        continue;
      }
      const after = job.memberCursor;
      const ofJob = slice ? slice.filter((s) => after === null || s > after) : await this.universeMembers(job, universe);
      for (const symbol of ofJob) {
        members.add(symbol);
        memberSeries.add(symbol);
      }
    }
    const symbols = [...members].sort();
    const perRequest = isMultiSymbolCandleSource(adapter) ? adapter.maxSymbolsPerRequest : 1;
    let records = 0;
    for (let i = 0; i < symbols.length; i += perRequest) {
      const batch = symbols.slice(i, i + perRequest);
      const pages = isMultiSymbolCandleSource(adapter)
        ? adapter.fetchCandlesOfSymbols(batch, tf, unit.fromMs, unit.toMs, { signal })
        : isCandleSource(adapter)
          ? adapter.fetchCandles(batch[0]!, tf, unit.fromMs, unit.toMs, { signal })
          : undefined;
      if (!pages) throw new TransientError(unit.venue, `${unit.venue} has no candle source`);
      for await (const page of pages) {
        await this.persist(ctx, page.envelopes);
        records += page.candles.length;
        await ctx.heartbeat();
        signal.throwIfAborted();
      }
    }
    for (const job of owing) {
      // a slice moves its job's member cursor; only the day's last slice moves the cursor past the day
      if (slice) await this.options.store.jobs.advanceMembers(job.id, unit.lastSlice ? { dayCursor } : { member: slice.at(-1)! });
      else await this.options.store.jobs.advanceCursor(job.id, dayCursor);
    }
    // The gap ledger checks the day against the calendar (a halted symbol, a venue hole) for each
    // single-symbol job and each member of a universe job this unit fetched, on that member's
    // series (`<venue>:<member>:<tf>:ohlcv`, the id a single job of it has; a slice scans its 3
    // members only). A hole shows between two stored bars, so the range reaches back over a long
    // weekend to the job's earlier bars: a missing day is found once a later day is stored (at the
    // next unit). Minute bars of universe members reach back only to the previous session's start:
    // 500 members' 5 days of minutes took 3-5 s to scan, the previous session 1.7 s (day bars: 0.1 s),
    // so a member without a single bar in the whole previous session is left to `gaps scan`.
    const scan = { fromMs: unit.fromMs - SCAN_BACK_MS, toMs: unit.toMs };
    const ledger = this.options.gapLedger;
    if (ledger) {
      for (const job of owing) if (universeOf(job.symbol) === null) await ledger.scan(job.id, scan);
      const memberScan =
        tf === '1d' ? scan : { fromMs: usEquitySessions(unit.fromMs - SCAN_BACK_MS, unit.fromMs).at(-1)?.dayStartMs ?? scan.fromMs, toMs: unit.toMs };
      for (const symbol of memberSeries) await ledger.scan(jobId({ venue: unit.venue, type: 'ohlcv', symbol, timeframe: tf }), memberScan);
    }
    return { outcome: 'ok', records, detail: `${session.date}: ${symbols.length} symbols, ${owing.length} jobs` };
  }

  /** The current members of a universe job's universe; a universe that is gone fails the unit naming it. */
  private async universeMembers(job: Job, universe: string): Promise<string[]> {
    const found = await this.options.store.universes.get(job.venue, universe);
    if (!found)
      throw new UnrecoverableError(job.venue, `job ${job.id}: universe ${universeKey(job.venue, universe)} does not exist (tickfleet universes set …)`);
    return found.symbols;
  }

  /** Catches a candle job up from its cursor to the last closed candle, page by page. */
  private async incremental(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const tf = requireTimeframe(job);
    const len = timeframeMs(tf);
    const now = this.options.clock.now() - (this.options.closeDelayMs ?? WORKER_DEFAULTS.closeDelayMs);
    // Up to the last final candle by the venue's calendar: on 24/7 venues the last closed one, for
    // US-equity day bars the last session whose trading (after-hours included) is over.
    const toMs = calendarFor(job.venue).finalBefore(tf, now);
    const fromMs = job.cursor !== null ? job.cursor + len : alignDown(job.since ?? toMs - this.lookbackMs, tf);
    if (fromMs >= toMs) return { outcome: 'ok', records: 0, detail: 'up to date' };
    let records = 0;
    let lastOpenTime: number | null = null;
    // A malformed page (truncated or wrong-shaped body) is a glitch of one answer: ask again from
    // the newest stored page right away (the shared budget paces the requests) instead of failing
    // the unit; only a long run of them ends the attempt, which is then retried with backoff.
    for (let from = fromMs, malformed = 0; from < toMs;) {
      try {
        const pass = await this.collectCandles(ctx, job, from, toMs, 'all-but-last');
        records += pass.records;
        lastOpenTime = pass.lastOpenTime ?? lastOpenTime;
        break;
      } catch (err) {
        if (!(err instanceof MalformedPayloadError) || ++malformed > INLINE_MALFORMED_RETRIES) throw err;
        this.noteMalformed(ctx, err);
        // collectCandles stored the cursor of every durable page before it threw
        const cursor = (await this.options.store.jobs.get(job.id))?.cursor ?? null;
        if (cursor !== null && cursor >= from) {
          lastOpenTime = cursor;
          from = cursor + len;
        }
      }
    }
    // A range that came back complete has no hole to find: the scan would re-read it for nothing.
    if (mayHoldHole(job.venue, records, fromMs, toMs, tf, this.options.clock.now())) {
      await this.options.gapLedger?.scan(job.id, withNeighbours(job.venue, tf, fromMs, toMs)).catch(async (err: unknown) => {
        // The unit ends here (shutdown, store down): its durable last page keeps its cursor.
        if (lastOpenTime !== null && !(err instanceof JobLockLostError) && !(ctx.signal.reason instanceof JobLockLostError))
          await this.options.store.jobs.advanceCursor(job.id, lastOpenTime).catch(() => undefined);
        throw err;
      });
    }
    const newest = lastOpenTime ?? job.cursor;
    if (newest !== null) {
      // Age of the next candle the venue's calendar expects (newest + timeframe on 24/7 venues).
      const lagMs = this.options.clock.now() - calendarFor(job.venue).nextExpectedOpen(tf, newest);
      this.options.metrics.cursorLagSeconds.set({ job_id: job.id }, Math.max(0, lagMs) / 1000);
    }
    // The last page's cursor goes with the job's completion (see UnitOutcome.cursor).
    return { outcome: 'ok', records, ...(lastOpenTime === null ? {} : { cursor: lastOpenTime }) };
  }

  /**
   * Polls a trades job: the venue's trades after the job's cursor (a trade id or a time, as the
   * adapter pages), or, on its first run, from `since` (else {@link WORKER_DEFAULTS.tradesLookbackMs}
   * ago), up to the newest. The last page's cursor goes with the job's completion.
   */
  private async pollTrades(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const from: TradesFrom =
      job.cursor !== null ? { cursor: job.cursor } : { sinceMs: job.since ?? this.options.clock.now() - WORKER_DEFAULTS.tradesLookbackMs };
    const { records, cursor, holes } = await this.collectTrades(ctx, job, from, undefined, 'all-but-last');
    const detail = holes > 0 ? `trades missing in ${holes} range${holes === 1 ? '' : 's'}: on the gap ledger` : undefined;
    return { outcome: 'ok', records, ...(cursor === null ? {} : { cursor }), ...(detail ? { detail } : {}) };
  }

  /**
   * Fetches and persists trade pages from `from` (before `untilMs` when given). Ids a venue with
   * contiguous ids skipped go on the gap ledger (kind `trade-ids`, the job id a stream of the symbol
   * reports its unhealed trades under) before the cursor passes them. `advance` as collectCandles'.
   */
  private async collectTrades(
    ctx: UnitContext,
    job: Job,
    from: TradesFrom,
    untilMs: number | undefined,
    advance: 'none' | 'all-but-last',
  ): Promise<{ records: number; cursor: number | null; holes: number }> {
    const { adapter, signal } = ctx;
    if (!isTradeSource(adapter)) throw new UnrecoverableError(job.venue, `job ${job.id}: ${job.venue} has no public trades source`);
    let records = 0;
    let holes = 0;
    const pages = adapter.fetchTrades(job.symbol, from, { signal, ...(untilMs === undefined ? {} : { untilMs }) });
    const cursor = await this.persistPages(ctx, job, pages, advance, async (page) => {
      for (const h of page.holes) {
        await this.options.store.gaps.record({ jobId: job.id, fromMs: h.fromId, toMs: h.toId + 1, kind: 'trade-ids' }, this.options.clock.now());
      }
      if (page.missing) await this.options.store.gaps.record({ jobId: job.id, ...page.missing, kind: 'missing' }, this.options.clock.now());
      holes += page.holes.length + (page.missing ? 1 : 0);
      await this.persist(ctx, page.envelopes);
      records += page.trades.length;
      return page.cursor;
    });
    return { records, cursor, holes };
  }

  /**
   * The unit's job from the store, or, while the store cannot be reached, the copy this worker
   * read last: the unit can then make its requests (on the worker's budget lease) instead of
   * waiting for the store before its first one. A stale copy is harmless: an older cursor only
   * re-fetches pages the idempotent sink already holds, and the unit ends at its first store
   * write, put back on the queue until the store answers.
   */
  private async readJob(id: string): Promise<Job | null> {
    try {
      const job = await this.options.store.jobs.get(id);
      if (job) this.lastJobs.set(id, job);
      else this.lastJobs.delete(id);
      return job;
    } catch (err) {
      const cached = err instanceof StoreUnavailableError ? this.lastJobs.get(id) : undefined;
      if (!cached) throw err;
      return cached;
    }
  }

  /** Counts a malformed venue answer and logs a sample of it, at most one line per venue per minute. */
  private noteMalformed(ctx: UnitContext, err: MalformedPayloadError): void {
    this.options.metrics.malformedPayloads.inc({ venue: err.venue });
    const now = this.options.clock.monotonic();
    const last = this.malformedSampled.get(err.venue);
    if (last && now - last.atMs < 60_000) {
      last.suppressed += 1;
      return;
    }
    this.malformedSampled.set(err.venue, { atMs: now, suppressed: 0 });
    ctx.logger.warn(
      { detail: err.detail, sample: err.sample, suppressed: last?.suppressed ?? 0 },
      'malformed venue payload, fetching the page again (sampled: one line per venue per minute)',
    );
  }

  /** One page-sized chunk of a backfill range; never moves the live cursor. */
  private async backfill(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { unit } = ctx;
    if (unit.fromMs === undefined || unit.toMs === undefined) throw new TransientError(unit.venue, 'backfill unit without range');
    if (unit.backfillId) {
      const bf = await this.options.store.backfills.get(unit.backfillId);
      if (!bf) return { outcome: 'skipped', records: 0, detail: 'backfill no longer exists' };
      if (bf.status === 'cancelled') return { outcome: 'skipped', records: 0, detail: 'backfill cancelled' };
    }
    if (job.type === 'trades') {
      // A time range of trades: no candle grid to scan; holes in contiguous ids go on the ledger as polled.
      const { records } = await this.collectTrades(ctx, job, { sinceMs: unit.fromMs }, unit.toMs, 'none');
      if (unit.backfillId) await this.options.store.backfills.chunkDone(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs });
      return { outcome: 'ok', records };
    }
    if (job.type === 'series') {
      // A range of economic-series history: no candle grid, so no gap ledger; the cursor stays the live job's.
      const { records, detail } = await this.collectSeries(ctx, job, unit.fromMs, unit.toMs);
      if (unit.backfillId) await this.options.store.backfills.chunkDone(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs });
      return { outcome: 'ok', records, detail };
    }
    const tf = requireTimeframe(job);
    const { records } = await this.collectCandles(ctx, job, unit.fromMs, unit.toMs, 'none');
    const ledger = this.options.gapLedger;
    if (ledger) {
      const openGaps = await this.options.store.gaps.list({ jobId: job.id, open: true });
      const inRange = openGaps.filter((g) => g.fromMs >= unit.fromMs! && g.toMs <= unit.toMs!);
      if (inRange.length > 0) {
        for (const g of inRange) await ledger.fillAttempted(g, records);
      } else if (mayHoldHole(job.venue, records, unit.fromMs, unit.toMs, tf, this.options.clock.now())) {
        // Only a chunk that came back short can hold a hole (a complete one would be re-read for nothing).
        await ledger.scan(job.id, withNeighbours(job.venue, tf, unit.fromMs, unit.toMs));
      }
    }
    // Per chunk and idempotent: a unit BullMQ runs twice marks the same chunk done twice.
    if (unit.backfillId) await this.options.store.backfills.chunkDone(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs });
    return { outcome: 'ok', records };
  }

  /**
   * A job's page loop: `onPage` persists a page and returns the job's cursor once it is durable
   * (null: an empty page). `advance`: `none` never moves the job's cursor (backfill chunks);
   * `all-but-last` stores each durable page's cursor once the next page arrives, or when the pass
   * fails, and leaves the last one (returned) to the caller, which stores it with the completion.
   */
  private async persistPages<P>(
    ctx: UnitContext,
    job: Job,
    pages: AsyncIterable<P>,
    advance: 'none' | 'all-but-last',
    onPage: (page: P) => Promise<number | null>,
  ): Promise<number | null> {
    const { signal } = ctx;
    let last: number | null = null;
    /** The cursor of the newest durable page, not stored yet. */
    let unstored: number | null = null;
    // Cursor only moves forward: the store applies max(cursor, the page's cursor).
    const storeCursor = async (): Promise<void> => {
      if (unstored === null) return;
      await this.options.store.jobs.advanceCursor(job.id, unstored);
      unstored = null;
    };
    try {
      for await (const page of pages) {
        // A unit that lost its job lock (the lock aborts the signal) stores no cursor any more.
        signal.throwIfAborted();
        await storeCursor();
        const cursor = await onPage(page);
        if (cursor === null) continue;
        last = cursor;
        if (advance === 'all-but-last') unstored = cursor;
        await ctx.heartbeat();
        signal.throwIfAborted();
      }
    } catch (err) {
      // The durable pages keep their progress (as advancing after each page did), unless the unit
      // lost its job lock: then another unit may own the cursor.
      if (!(err instanceof JobLockLostError) && !(signal.reason instanceof JobLockLostError)) await storeCursor().catch(() => undefined);
      throw err;
    }
    return last;
  }

  /**
   * Fetches and persists the candle pages of `[fromMs, toMs)`; `advance` as {@link persistPages},
   * the last page's cursor returned as `lastOpenTime`.
   */
  private async collectCandles(
    ctx: UnitContext,
    job: Job,
    fromMs: number,
    toMs: number,
    advance: 'none' | 'all-but-last',
  ): Promise<{ records: number; lastOpenTime: number | null }> {
    const { adapter, signal } = ctx;
    if (!isCandleSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no candle source`);
    const tf = requireTimeframe(job);
    let records = 0;
    const pages = adapter.fetchCandles(job.symbol, tf, fromMs, toMs, { signal });
    const lastOpenTime = await this.persistPages(ctx, job, pages, advance, async (page) => {
      if (page.candles.length === 0) return null;
      await this.persist(ctx, page.envelopes);
      records += page.candles.length;
      return page.candles[page.candles.length - 1]!.openTime;
    });
    return { records, lastOpenTime };
  }

  private async bookPoll(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal } = ctx;
    if (!isBookSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no order-book source`);
    // The set in force decides, never a discovery in progress: an instrument outside it (retired,
    // or not yet swapped in) is not polled, nor one whose market expired since the last discovery.
    const set = await this.options.activeSets.current(job.venue);
    if (set) {
      const inst = set.instruments[job.symbol];
      if (!inst) return { outcome: 'skipped', records: 0, detail: `not in the active set (version ${set.version})` };
      const expiresAtMs = inst.market.expiresAtMs;
      if (expiresAtMs !== undefined && expiresAtMs <= this.options.clock.now()) {
        return { outcome: 'skipped', records: 0, detail: `market expired at ${new Date(expiresAtMs).toISOString()}; retired at the next discovery` };
      }
    }
    const { book, envelope } = await adapter.fetchBook(job.symbol, { signal });
    await this.persist(ctx, [envelope]);
    await this.options.store.jobs.advanceCursor(job.id, book.timeMs);
    return { outcome: 'ok', records: 1 };
  }

  /**
   * Refreshes the venue's active order-book set (slow path, never waited on by book polls): lists
   * the venue's instruments and swaps in the next set (instrument-lifecycle.ts: sticky until
   * expiry, `markets` records on membership change, book jobs created or retired). A listing that
   * fails throws before anything changes, so the set in force stays.
   */
  private async discovery(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal } = ctx;
    if (!isBookSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no instrument discovery`);
    const instruments = await adapter.listInstruments({ signal });
    const result = await refreshActiveSet(
      {
        store: this.options.store,
        activeSets: this.options.activeSets,
        persist: (envelopes) => this.persist(ctx, envelopes),
        snapshot: (set) => this.snapshotActiveSet(ctx, set),
      },
      job,
      instruments,
      this.options.clock.now(),
    );
    return {
      outcome: 'ok',
      records: result.records.length,
      detail: `${instruments.length} instruments listed; active set version ${result.version}: ${result.active} active, ${result.listed} joined, ${result.retired} retired`,
    };
  }

  /**
   * Daily files: lists the market's files for the unit's date (default: today, UTC) and downloads
   * each one after the cursor (the minute of the last file stored), oldest first.
   */
  private async dailyFiles(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal, unit } = ctx;
    if (!isFileSource(adapter)) throw new TransientError(job.venue, `${job.venue} publishes no files`);
    const dayMs = unit.fromMs ?? alignDown(this.options.clock.now(), '1d');
    const date = new Date(dayMs).toISOString().slice(0, 10);
    const files = (await adapter.listFiles(date, { signal, markets: [job.symbol] }))
      .filter((f) => f.market === job.symbol)
      .sort((a, b) => (a.minuteMs ?? 0) - (b.minuteMs ?? 0) || a.name.localeCompare(b.name));
    // Files up to the cursor were stored by an earlier run: they count as done in the progress.
    const owed = files.filter((f) => f.minuteMs === undefined || job.cursor === null || f.minuteMs > job.cursor);
    const progress: UnitProgress = { files: files.length - owed.length, filesTotal: files.length, bytes: 0, records: 0 };
    // One Redis write per PROGRESS_EVERY_MS at most (a paced day is ~1,800 files), plus the first and the last.
    let reportedAtMs = Number.NEGATIVE_INFINITY;
    const report = async (last: boolean): Promise<void> => {
      const nowMs = this.options.clock.monotonic();
      if (!last && nowMs - reportedAtMs < PROGRESS_EVERY_MS) return;
      reportedAtMs = nowMs;
      await ctx.progress?.({ ...progress });
    };
    await report(true);
    for (const [i, file] of owed.entries()) {
      const { envelopes, bytes } = await adapter.fetchFile(file, { signal });
      await this.persist(ctx, envelopes);
      progress.records += envelopes.length;
      progress.bytes += bytes;
      progress.files += 1;
      if (file.minuteMs !== undefined) await this.options.store.jobs.advanceCursor(job.id, file.minuteMs);
      await ctx.heartbeat();
      await report(i === owed.length - 1);
      signal.throwIfAborted();
    }
    return { outcome: 'ok', records: progress.records, detail: `${files.length} files listed for ${date}` };
  }

  /**
   * Economic series: every series the job's symbol stands for (FRED `treasury-curve`: all eleven
   * constant-maturity tenors, in this one unit), observation dates from the job's cursor less
   * {@link SERIES_REVISION_WINDOW_MS} (or `since`, or the initial lookback) to yesterday (UTC),
   * each published vintage one record. Asking again for recent dates costs nothing in storage
   * (a vintage already stored has the same key) and picks up revisions published since.
   *
   * A date the publisher has no value for (a bond-market holiday in a daily series) arrives as a
   * null observation and is stored as one: a hole in the values, never a gap. The gap ledger,
   * which tracks candle grids, has nothing to scan here. The cursor becomes the newest
   * observation date stored, after every series of the unit is durable.
   */
  private async series(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const toMs = alignDown(this.options.clock.now(), '1d');
    const startMs = job.since === null ? toMs - this.lookbackMs : job.since;
    // The day `since` falls in counts whole (observation dates are days).
    const fromMs = alignDown(job.cursor === null ? startMs : Math.max(startMs, job.cursor - SERIES_REVISION_WINDOW_MS), '1d');
    const { records, newest, detail } = await this.collectSeries(ctx, job, fromMs, toMs);
    if (newest !== null) await this.options.store.jobs.advanceCursor(job.id, newest);
    return { outcome: 'ok', records, detail };
  }

  /**
   * Every vintage of the observations dated in `[fromMs, toMs)` (UTC days) of every series the
   * job's symbol stands for, each series page durable before the next is asked for. Returns the
   * newest observation date stored (epoch ms), for the caller's cursor.
   */
  private async collectSeries(ctx: UnitContext, job: Job, fromMs: number, toMs: number): Promise<{ records: number; newest: number | null; detail: string }> {
    const { adapter, signal } = ctx;
    if (!isSeriesSource(adapter)) throw new UnrecoverableError(job.venue, `${job.venue} publishes no economic series (job ${job.id})`);
    // Observation dates are UTC midnights: the first at or after fromMs, the last before toMs.
    const firstDay = alignDown(fromMs + DAY_MS - 1, '1d');
    const lastDay = alignDown(toMs - 1, '1d');
    if (firstDay > lastDay) return { records: 0, newest: null, detail: 'up to date' };
    const fromDate = isoDay(firstDay);
    const toDate = isoDay(lastDay);
    const ids = adapter.seriesOf(job.symbol);
    // One request per series in the usual case (a page holds FRED's whole range): reserved at once.
    await ctx.reserve?.(ids.length);
    let records = 0;
    let newest: number | null = null;
    for (const id of ids) {
      for await (const page of adapter.fetchSeries(id, fromDate, toDate, { signal })) {
        await this.persist(ctx, page.envelopes);
        records += page.observations.length;
        for (const o of page.observations) newest = Math.max(newest ?? 0, Date.parse(`${o.date}T00:00:00Z`));
        await ctx.heartbeat();
        signal.throwIfAborted();
      }
    }
    return { records, newest, detail: `${ids.length} series, ${fromDate}..${toDate}` };
  }

  /**
   * Copies the active set just swapped in to the sink's `<venue>/state/` (JSONL sinks only). The set
   * in force is Redis's, so a failed copy is logged, not a failed discovery; the next one writes it.
   */
  private async snapshotActiveSet(ctx: UnitContext, set: ActiveSet): Promise<void> {
    try {
      await this.options.pipeline.sink.writeState?.(set.venue, ACTIVE_SET_SNAPSHOT, set);
    } catch (err) {
      ctx.logger.warn({ err, venue: set.venue, version: set.version }, 'could not write the active set snapshot');
    }
  }

  /** Hands records to the pipeline and waits until they are durable; refuses to go past dropped ones. */
  private async persist(ctx: UnitContext, envelopes: Envelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    // Built by the venue adapter from payloads its schemas already validated: no second parse.
    const result = await this.options.pipeline.pushValidated(envelopes);
    if (result.dropped > 0) {
      // Not acknowledged: the unit goes back to the queue (no attempt burned) and fetches them again.
      const spool = this.options.pipeline.spool;
      throw new SpoolFullError(
        spool?.dir ?? 'spool',
        spool?.fullReason ?? 'cap',
        this.options.clock.now() + (spool?.retryAfterMs ?? SPOOL_DEFAULTS.retryAfterMs),
        `${result.dropped} records dropped by a full spool (onFull ${spool?.onFull ?? 'policy'}); not advancing past them`,
      );
    }
    if (result.rejected.length > 0) {
      ctx.logger.warn({ rejected: result.rejected.length, first: result.rejected[0] }, 'records rejected by the pipeline');
    }
    const first = envelopes[0]!;
    this.options.metrics.records.inc({ venue: first.venue, channel: first.channel }, result.accepted);
  }
}

const DAY_MS = 86_400_000;
/**
 * How far before its cursor a series job asks again: revisions of monthly series (CPI) come a
 * month or two after the first release, and one request covers the whole window anyway.
 */
const SERIES_REVISION_WINDOW_MS = 93 * DAY_MS;

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Malformed pages in a row one incremental unit fetches again before its attempt fails. */
const INLINE_MALFORMED_RETRIES = 100;

function requireTimeframe(job: Job): NonNullable<Job['timeframe']> {
  if (!job.timeframe) throw new TransientError(job.venue, `job ${job.id} has no timeframe`);
  return job.timeframe;
}

/**
 * How many candles a complete fetch of [fromMs, toMs) returns now on a 24/7 venue: the closed open
 * times in it. A fetch that stored this many (the adapter refuses rows out of range or out of
 * order) left no hole in the range.
 */
export function closedSlots(fromMs: number, toMs: number, tf: Timeframe, nowMs: number): number {
  const len = timeframeMs(tf);
  const first = alignDown(fromMs + len - 1, tf);
  const last = alignDown(Math.min(toMs - 1, lastClosedOpenTime(nowMs, tf)), tf);
  return last < first ? 0 : (last - first) / len + 1;
}

/**
 * Whether a fetch of [fromMs, toMs) that stored `records` candles may have left a hole, so the gap
 * ledger should scan it. On a 24/7 venue only a short fetch can. On a venue with sessions the
 * venue also serves candles the calendar does not expect (extended-hours bars, which exist only
 * when something traded), so a count proves nothing: such a range is always scanned (one indexed
 * read per unit, and equity venues run few units).
 */
function mayHoldHole(venue: string, records: number, fromMs: number, toMs: number, tf: Timeframe, nowMs: number): boolean {
  const calendar = calendarFor(venue);
  if (calendar.name !== '24/7') return true;
  return records < closedSlots(fromMs, toMs, tf, nowMs);
}
