import {
  alignDown,
  type Clock,
  type Envelope,
  jobId as makeJobId,
  type Job,
  lastClosedOpenTime,
  MalformedPayloadError,
  SpoolFullError,
  StoreUnavailableError,
  timeframeMs,
  type Timeframe,
  TransientError,
  UnrecoverableError,
} from '@tickfleet/core';
import type { QueuedUnit } from '@tickfleet/queues';
import type { GapLedger, Pipeline } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import type { Logger } from '@tickfleet/telemetry';
import { isBookSource, isCandleSource, isFileSource, type VenueAdapter } from '@tickfleet/venues';
import type { WorkerMetrics } from './worker-metrics.js';

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
  /** Renews the unit's job lock and BullMQ lock; call between pages of long units. */
  heartbeat(): Promise<void>;
  logger: Logger;
}

export interface UnitOutcome {
  outcome: 'ok' | 'skipped';
  records: number;
  detail?: string;
}

export interface UnitExecutorOptions {
  store: StateStore;
  pipeline: Pipeline;
  clock: Clock;
  metrics: WorkerMetrics;
  gapLedger?: GapLedger;
  /** How far back a candle job without `since` or cursor starts. @defaultValue 1 day */
  initialLookbackMs?: number;
  /** Delay after a candle closes before collecting it (venues publish a close a moment later). @defaultValue 2000 */
  closeDelayMs?: number;
}

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
    this.lookbackMs = options.initialLookbackMs ?? 24 * 3600_000;
  }

  async run(ctx: UnitContext): Promise<UnitOutcome> {
    const { unit } = ctx;
    const job = await this.readJob(unit.jobId);
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
        if (job.type !== 'ohlcv')
          throw new UnrecoverableError(job.venue, `job ${job.id}: ${job.type} jobs have no incremental collector (trade polling is not built)`);
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
    }
  }

  /** Catches a candle job up from its cursor to the last closed candle, page by page. */
  private async incremental(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const tf = requireTimeframe(job);
    const len = timeframeMs(tf);
    const now = this.options.clock.now() - (this.options.closeDelayMs ?? 2000);
    const toMs = lastClosedOpenTime(now, tf) + len;
    const fromMs = job.cursor !== null ? job.cursor + len : alignDown(job.since ?? toMs - this.lookbackMs, tf);
    if (fromMs >= toMs) return { outcome: 'ok', records: 0, detail: 'up to date' };
    let records = 0;
    let lastOpenTime: number | null = null;
    // A malformed page (truncated or wrong-shaped body) is a glitch of one answer: ask again from
    // the newest stored page right away (the shared budget paces the requests) instead of failing
    // the unit; only a long run of them ends the attempt, which is then retried with backoff.
    for (let from = fromMs, malformed = 0; from < toMs;) {
      try {
        const pass = await this.collectCandles(ctx, job, from, toMs, true);
        records += pass.records;
        lastOpenTime = pass.lastOpenTime ?? lastOpenTime;
        break;
      } catch (err) {
        if (!(err instanceof MalformedPayloadError) || ++malformed > INLINE_MALFORMED_RETRIES) throw err;
        this.noteMalformed(ctx, err);
        const cursor = (await this.options.store.jobs.get(job.id))?.cursor ?? null;
        if (cursor !== null && cursor >= from) {
          lastOpenTime = cursor;
          from = cursor + len;
        }
      }
    }
    // A range that came back complete has no hole to find: the scan would re-read it for nothing.
    if (records < closedSlots(fromMs, toMs, tf, this.options.clock.now())) await this.options.gapLedger?.scan(job.id, { fromMs: fromMs - len, toMs });
    const newest = lastOpenTime ?? job.cursor;
    if (newest !== null) this.options.metrics.cursorLagSeconds.set({ job: job.id }, Math.max(0, this.options.clock.now() - newest - len) / 1000);
    return { outcome: 'ok', records };
  }

  /**
   * The unit's job from the store, or, while the store cannot be reached, the copy this worker
   * read last: the unit can then make its requests (on the fallback budget share) instead of
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
    const tf = requireTimeframe(job);
    const { records } = await this.collectCandles(ctx, job, unit.fromMs, unit.toMs, false);
    const ledger = this.options.gapLedger;
    if (ledger) {
      const openGaps = await this.options.store.gaps.list({ jobId: job.id, open: true });
      const inRange = openGaps.filter((g) => g.fromMs >= unit.fromMs! && g.toMs <= unit.toMs!);
      if (inRange.length > 0) {
        for (const g of inRange) await ledger.fillAttempted(g, records);
      } else if (records < closedSlots(unit.fromMs, unit.toMs, tf, this.options.clock.now())) {
        // Only a chunk that came back short can hold a hole (a complete one would be re-read for nothing).
        await ledger.scan(job.id, { fromMs: unit.fromMs - timeframeMs(tf), toMs: unit.toMs + timeframeMs(tf) });
      }
    }
    // Per chunk and idempotent: a unit BullMQ runs twice marks the same chunk done twice.
    if (unit.backfillId) await this.options.store.backfills.chunkDone(unit.backfillId, { fromMs: unit.fromMs, toMs: unit.toMs });
    return { outcome: 'ok', records };
  }

  private async collectCandles(
    ctx: UnitContext,
    job: Job,
    fromMs: number,
    toMs: number,
    advanceCursor: boolean,
  ): Promise<{ records: number; lastOpenTime: number | null }> {
    const { adapter, signal } = ctx;
    if (!isCandleSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no candle source`);
    const tf = requireTimeframe(job);
    let records = 0;
    let lastOpenTime: number | null = null;
    for await (const page of adapter.fetchCandles(job.symbol, tf, fromMs, toMs, { signal })) {
      if (page.candles.length === 0) continue;
      await this.persist(ctx, page.envelopes);
      records += page.candles.length;
      lastOpenTime = page.candles[page.candles.length - 1]!.openTime;
      // Cursor only moves forward: the store applies max(cursor, lastOpenTime).
      if (advanceCursor) await this.options.store.jobs.advanceCursor(job.id, lastOpenTime);
      await ctx.heartbeat();
      signal.throwIfAborted();
    }
    return { records, lastOpenTime };
  }

  private async bookPoll(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal } = ctx;
    if (!isBookSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no order-book source`);
    const { book, envelope } = await adapter.fetchBook(job.symbol, { signal });
    await this.persist(ctx, [envelope]);
    await this.options.store.jobs.advanceCursor(job.id, book.timeMs);
    return { outcome: 'ok', records: 1 };
  }

  /**
   * Refreshes the venue's active instruments (slow path): one `book` job per listed instrument,
   * enabled; book jobs of instruments no longer listed are disabled.
   */
  private async discovery(ctx: UnitContext, job: Job): Promise<UnitOutcome> {
    const { adapter, signal } = ctx;
    if (!isBookSource(adapter)) throw new TransientError(job.venue, `${job.venue} has no instrument discovery`);
    const instruments = await adapter.listInstruments({ signal });
    const { store } = this.options;
    const listed = new Set<string>();
    for (const inst of instruments) {
      const id = makeJobId({ venue: job.venue, type: 'book', symbol: inst.symbol });
      listed.add(id);
      const existing = await store.jobs.get(id);
      if (!existing) {
        await store.jobs.upsert({ venue: job.venue, type: 'book', symbol: inst.symbol, priority: job.priority, nextRunAt: this.options.clock.now() });
      } else if (!existing.enabled) {
        await store.jobs.setEnabled(id, true);
      }
    }
    for (const j of await store.jobs.list({ venue: job.venue, type: 'book', enabled: true })) {
      if (!listed.has(j.id)) await store.jobs.setEnabled(j.id, false);
    }
    return { outcome: 'ok', records: 0, detail: `${instruments.length} instruments` };
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
    let records = 0;
    for (const file of files) {
      if (file.minuteMs !== undefined && job.cursor !== null && file.minuteMs <= job.cursor) continue;
      const { envelopes } = await adapter.fetchFile(file, { signal });
      await this.persist(ctx, envelopes);
      records += envelopes.length;
      if (file.minuteMs !== undefined) await this.options.store.jobs.advanceCursor(job.id, file.minuteMs);
      await ctx.heartbeat();
      signal.throwIfAborted();
    }
    return { outcome: 'ok', records, detail: `${files.length} files listed for ${date}` };
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
        this.options.clock.now() + (spool?.retryAfterMs ?? 5000),
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

/** Malformed pages in a row one incremental unit fetches again before its attempt fails. */
const INLINE_MALFORMED_RETRIES = 100;

function requireTimeframe(job: Job): NonNullable<Job['timeframe']> {
  if (!job.timeframe) throw new TransientError(job.venue, `job ${job.id} has no timeframe`);
  return job.timeframe;
}

/**
 * How many candles a complete fetch of [fromMs, toMs) returns now: the closed open times in it.
 * A fetch that stored this many (the adapter refuses rows out of range or out of order) left no
 * hole in the range.
 */
export function closedSlots(fromMs: number, toMs: number, tf: Timeframe, nowMs: number): number {
  const len = timeframeMs(tf);
  const first = alignDown(fromMs + len - 1, tf);
  const last = alignDown(Math.min(toMs - 1, lastClosedOpenTime(nowMs, tf)), tf);
  return last < first ? 0 : (last - first) / len + 1;
}
