import { dedupKey, PipelineClosedError, SinkUnavailableError, VenueName, systemClock, type Clock, type Envelope } from '@tickfleet/core';
import type { Logger, Registry } from '@tickfleet/telemetry';
import { Batcher, type BatcherOptions } from './batcher.js';
import { DedupWindow, type DedupWindowOptions } from './dedup-window.js';
import { ErrorSampler, type ErrorSamplerOptions } from './error-sampler.js';
import { validateBatch } from './internal/validate-batch.js';
import { PipelineMetrics } from './pipeline-metrics.js';
import type { KeyedEnvelope } from './records.js';
import { ReplayWorker, type ReplayWorkerOptions } from './replay-worker.js';
import type { CandleQuery, ErrorSample, RejectedRecord, Sink } from './sink.js';
import type { Spool } from './spool.js';

/** What became of one record: in the sink (new or already there), in the spool, or dropped by a full spool. */
export type RecordOutcome = 'stored' | 'duplicate' | 'spooled' | 'dropped';

export interface PushResult {
  /** Records that passed validation and the dedup window. */
  accepted: number;
  stored: number;
  /** Already in the sink, or dropped by the dedup window (seen within it). */
  duplicates: number;
  spooled: number;
  /** Dropped by a full spool (`drop_all` / `drop_book_keep_trades`): NOT durable, do not advance past them. */
  dropped: number;
  rejected: RejectedRecord[];
}

/** The dedup window as `/healthz` reports it: off, or its bounds, the keys it holds and what it dropped. */
export type DedupStatus = { enabled: false } | { enabled: true; windowMs: number; maxKeys: number; keys: number; dropped: number };

export interface PipelineOptions {
  sink: Sink;
  /** Where batches go while the sink is unavailable; without one a sink failure fails the push. */
  spool?: Spool;
  /** Optional in-memory dedup in front of the sink. @defaultValue disabled */
  dedup?: DedupWindowOptions | false;
  batch?: BatcherOptions;
  /** Replay of the spool into the sink; started by the pipeline when a spool is given. */
  replay?: Omit<ReplayWorkerOptions, 'metrics' | 'logger'> | false;
  errors?: ErrorSamplerOptions;
  /** Metrics register here (`tickfleet_sink_*`, `tickfleet_spool_*`, `tickfleet_dedup_*`). */
  metrics?: PipelineMetrics;
  registry?: Registry;
  logger?: Logger;
  clock?: Clock;
}

/**
 * The persistence pipeline: validate -> dedup window -> batcher -> primary sink -> on
 * unavailability the spool -> replay into the sink when it is back.
 *
 * `push` resolves once every accepted record is durable: stored in the sink or appended to the
 * spool. It rejects with SpoolFullError when the sink is down and the spool cannot take the
 * records within its `blockTimeoutMs` (none of that batch is acknowledged). Callers advance their cursors only after it resolves (and not past dropped records).
 * While the sink is not `ok`, batches go straight to the spool; the replay worker's writes are
 * the probe that brings the sink back to `ok`.
 */
export class Pipeline {
  readonly metrics: PipelineMetrics;
  readonly sink: Sink;
  readonly spool: Spool | undefined;
  readonly replay: ReplayWorker | undefined;
  private readonly dedup: DedupWindow | undefined;
  /** Records the dedup window dropped since start (also in `tickfleet_dedup_dropped_total` by venue and channel). */
  private dedupDropped = 0;
  private readonly batcher: Batcher<KeyedEnvelope, RecordOutcome>;
  private readonly sampler: ErrorSampler;
  private readonly logger: Logger | undefined;
  private readonly clock: Clock;
  private closed = false;

  constructor(options: PipelineOptions) {
    this.sink = options.sink;
    this.spool = options.spool;
    this.metrics = options.metrics ?? new PipelineMetrics(options.registry);
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.dedup = options.dedup ? new DedupWindow({ clock: this.clock, ...options.dedup }) : undefined;
    this.sampler = new ErrorSampler({ clock: this.clock, ...options.errors });
    this.batcher = new Batcher((batch) => this.writeBatch(batch), options.batch);
    const adapter = this.sink.adapter;
    this.metrics.setSinkState(adapter, this.sink.state);
    this.sink.onStateChange((state) => {
      this.metrics.setSinkState(adapter, state);
      this.logger?.warn({ adapter, state }, 'sink state changed');
    });
    this.sink.onRetry(({ attempt, delayMs, error }) => this.logger?.debug({ adapter, attempt, delayMs, err: error }, 'sink write failed; retrying'));
    if (this.spool && options.replay !== false) {
      this.replay = new ReplayWorker(this.spool, this.sink, { ...options.replay, metrics: this.metrics, ...(this.logger ? { logger: this.logger } : {}) });
      this.replay.start();
    }
  }

  /** Whether the dedup window is on, with its bounds, the keys it holds now and the records it dropped. */
  dedupStatus(): DedupStatus {
    const d = this.dedup;
    return d ? { enabled: true, windowMs: d.windowMs, maxKeys: d.maxKeys, keys: d.size, dropped: this.dedupDropped } : { enabled: false };
  }

  /** Validates, dedups and writes `records`; resolves when the accepted ones are durable. */
  async push(records: readonly unknown[]): Promise<PushResult> {
    if (this.closed) throw new PipelineClosedError();
    const { valid, rejected } = validateBatch(records);
    if (rejected.length > 0) await this.reportRejected(records, rejected);
    return this.write(valid, rejected);
  }

  /**
   * {@link push} for envelopes built in this process from payloads already validated (a venue
   * adapter parses every response with its schema before it builds envelopes): skips the second
   * schema parse of each record, which was the larger part of a worker's CPU per unit; the dedup
   * key and everything after it are the same.
   */
  async pushValidated(envelopes: readonly Envelope[]): Promise<PushResult> {
    if (this.closed) throw new PipelineClosedError();
    return this.write(
      envelopes.map((envelope) => ({ key: dedupKey(envelope), envelope })),
      [],
    );
  }

  private async write(valid: readonly KeyedEnvelope[], rejected: RejectedRecord[]): Promise<PushResult> {
    // Without a dedup window every record goes to the sink, which stores each key once (a repeat
    // within the push included) and counts the rest as duplicates.
    const { fresh, windowDrops } = this.dedup ? this.dropSeen(valid, this.dedup) : { fresh: valid, windowDrops: 0 };
    const outcomes = await this.batcher.push(fresh);
    const result: PushResult = { accepted: fresh.length, stored: 0, duplicates: windowDrops, spooled: 0, dropped: 0, rejected };
    outcomes.forEach((o, i) => {
      if (o === 'stored') result.stored += 1;
      else if (o === 'duplicate') result.duplicates += 1;
      else if (o === 'spooled') result.spooled += 1;
      else result.dropped += 1;
      // Remember only what is durable, so a failed push can be retried without the window eating it.
      if (o !== 'dropped' && this.dedup) this.dedup.add((fresh[i] as KeyedEnvelope).key);
    });
    return result;
  }

  /** The records neither seen by the dedup window nor repeated earlier in the same push. */
  private dropSeen(valid: readonly KeyedEnvelope[], window: DedupWindow): { fresh: KeyedEnvelope[]; windowDrops: number } {
    const fresh: KeyedEnvelope[] = [];
    let windowDrops = 0;
    const inPush = new Set<string>();
    for (const k of valid) {
      if (inPush.has(k.key) || window.has(k.key)) {
        windowDrops += 1;
        this.dedupDropped += 1;
        this.metrics.dedupDropped.inc({ venue: k.envelope.venue, channel: k.envelope.channel });
        continue;
      }
      inPush.add(k.key);
      fresh.push(k);
    }
    return { fresh, windowDrops };
  }

  /** Writes whatever is batched now. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }

  /**
   * Whether candles of the series in [fromMs, toMs) may still sit in this pipeline's spool, not
   * yet replayed into the sink: a gap read from the sink there may be no gap at all.
   */
  hasSpooledCandles(query: CandleQuery): boolean {
    return this.spool?.hasCandles(query) ?? false;
  }

  /** Calls `listener` each time replay moved a spool segment into the sink. */
  onReplayed(listener: () => void): void {
    this.spool?.onSegmentDeleted(listener);
  }

  /**
   * Flushes, stops replay (a segment in progress is kept), closes the spool. The sink stays open:
   * its owner closes it. Appends waiting for spool space fail at once (their records were not
   * acknowledged, so their producers fetch them again) instead of holding the shutdown.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.spool?.stopWaiting();
    await this.batcher.flush();
    await this.replay?.stop();
    await this.spool?.close();
  }

  private async writeBatch(batch: KeyedEnvelope[]): Promise<RecordOutcome[]> {
    const adapter = this.sink.adapter;
    // Without a replay worker nothing would probe the sink back to `ok`, so every batch tries it.
    if (!this.spool || !this.replay || this.sink.state === 'ok') {
      const started = this.clock.monotonic();
      try {
        const res = await this.sink.writeKeyed(batch);
        this.metrics.batchWriteSeconds.observe({ adapter }, (this.clock.monotonic() - started) / 1000);
        this.metrics.inserted.inc({ adapter }, res.inserted);
        this.metrics.duplicates.inc({ adapter }, res.duplicates);
        // Per-record new-vs-duplicate is not known from a bulk insert; the counts are exact.
        return batch.map((_, i) => (i < res.inserted ? 'stored' : 'duplicate'));
      } catch (err) {
        if (!this.spool || !(err instanceof SinkUnavailableError)) throw err;
        this.metrics.batchWriteSeconds.observe({ adapter }, (this.clock.monotonic() - started) / 1000);
        for (const k of batch) this.metrics.ingestErrors.inc({ venue: k.envelope.venue, adapter });
        this.logger?.warn({ err, adapter, records: batch.length }, 'sink unavailable: spooling batch');
      }
    }
    const res = await this.spool.append(batch.map((k) => k.envelope));
    return res.appended.map((ok) => (ok ? 'spooled' : 'dropped'));
  }

  private async reportRejected(records: readonly unknown[], rejected: RejectedRecord[]): Promise<void> {
    const samples: ErrorSample[] = [];
    for (const r of rejected) {
      const record = records[r.index];
      // Only a well-formed venue name becomes a label value: garbage must not mint new series.
      const parsed = VenueName.safeParse((record as { venue?: unknown } | null)?.venue);
      const venue = parsed.success ? parsed.data : 'unknown';
      this.metrics.ingestErrors.inc({ venue, adapter: this.sink.adapter });
      const s = this.sampler.sample(record, r.error);
      if (s) samples.push(s);
      this.logger?.warn({ venue, field: r.error.field, err: r.error }, 'malformed record rejected');
    }
    if (samples.length === 0) return;
    try {
      await this.sink.writeErrors(samples);
    } catch (err) {
      this.logger?.warn({ err }, 'could not write error samples');
    }
  }
}
