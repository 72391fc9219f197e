import { SinkUnavailableError } from '@tickfleet/core';
import type { Logger } from '@tickfleet/telemetry';
import { sleep } from './internal/sleep.js';
import type { PipelineMetrics } from './pipeline-metrics.js';
import type { Sink } from './sink.js';
import type { Spool } from './spool.js';
import { REPLAY_DEFAULTS } from './sink-defaults.js';

export interface ReplayWorkerOptions {
  /** Records per sink write. @defaultValue {@link REPLAY_DEFAULTS.batchSize} */
  batchSize?: number;
  /** Pause between successful batches, so a drain does not starve live writes. @defaultValue {@link REPLAY_DEFAULTS.paceMs} */
  paceMs?: number;
  /** Wait after a failed attempt or when there is nothing to replay. @defaultValue {@link REPLAY_DEFAULTS.retryIntervalMs} */
  retryIntervalMs?: number;
  metrics?: PipelineMetrics;
  logger?: Logger;
}

const EMPTY = { segments: 0, records: 0, inserted: 0, duplicates: 0, rejected: 0 };

export interface DrainResult {
  segments: number;
  records: number;
  inserted: number;
  duplicates: number;
  rejected: number;
  /** Set when the sink failed; the segment being replayed stays on disk. */
  error?: SinkUnavailableError;
}

/**
 * Replays spooled records into the primary sink: oldest complete segment first, never the
 * segment being written, each segment deleted only after all its records are written. A failure
 * or a shutdown leaves the segment in place; its next replay starts from its first record and
 * the idempotent sink absorbs the repeats.
 */
export class ReplayWorker {
  private readonly batchSize: number;
  private readonly paceMs: number;
  private readonly retryIntervalMs: number;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private draining: Promise<DrainResult> | undefined;

  constructor(
    private readonly spool: Spool,
    private readonly sink: Sink,
    private readonly options: ReplayWorkerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? REPLAY_DEFAULTS.batchSize;
    this.paceMs = options.paceMs ?? REPLAY_DEFAULTS.paceMs;
    this.retryIntervalMs = options.retryIntervalMs ?? REPLAY_DEFAULTS.retryIntervalMs;
  }

  get running(): boolean {
    return this.loop !== undefined;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        // A sink outage comes back in the result; anything else (a segment that cannot be read or
        // deleted) is thrown. Either way the loop waits and tries again.
        let failure: unknown;
        let replayed = 0;
        try {
          const r = await this.drain();
          failure = r.error;
          replayed = r.segments;
        } catch (err) {
          failure = err;
        }
        if (failure !== undefined) this.options.logger?.warn({ err: failure, adapter: this.sink.adapter }, 'spool replay failed; retrying');
        if (!signal.aborted && (failure !== undefined || replayed === 0)) await sleep(this.retryIntervalMs, signal);
      }
    })();
  }

  /** Stops after the batch in flight (its segment is kept and replayed again later). */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
  }

  /**
   * Replays every complete segment now (sealing the current one first when it holds records
   * and nothing older waits). Concurrent calls share one drain.
   */
  drain(): Promise<DrainResult> {
    this.draining ??= this.drainNow().finally(() => (this.draining = undefined));
    return this.draining;
  }

  private async drainNow(): Promise<DrainResult> {
    const result: DrainResult = { ...EMPTY };
    const signal = this.abort.signal;
    // Drain passes until nothing is left: the current segment is sealed (turned complete, appends
    // moving to a new one) only once everything older is in the sink.
    for (;;) {
      if (this.spool.completeSegments().length === 0) this.spool.seal();
      const segments = this.spool.completeSegments();
      if (segments.length === 0) return result;
      for (const seg of segments) {
        if (signal.aborted) return result;
        const records = this.spool.readSegment(seg.name);
        for (let i = 0; i < records.length; i += this.batchSize) {
          if (signal.aborted) return result;
          const batch = records.slice(i, i + this.batchSize);
          try {
            // A sink known to be down gets one probe per batch rather than the full retry ladder.
            const res = await this.sink.write(batch, this.sink.state === 'ok' ? {} : { maxRetries: 0 });
            result.inserted += res.inserted;
            result.duplicates += res.duplicates;
            result.rejected += res.rejected.length;
            this.options.metrics?.spoolReplayed.inc(batch.length);
          } catch (err) {
            if (!(err instanceof SinkUnavailableError)) throw err;
            result.error = err;
            return result;
          }
          if (this.paceMs > 0) await sleep(this.paceMs, signal);
        }
        if (signal.aborted) return result;
        this.spool.deleteSegment(seg.name);
        result.segments += 1;
        result.records += records.length;
      }
    }
  }
}
