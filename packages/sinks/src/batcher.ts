import { PIPELINE_DEFAULTS } from './sink-defaults.js';

export interface BatcherOptions {
  /**
   * Most records in one write. A venue page (Binance's 1,000 candles) fits in one, so it is one
   * transaction. @defaultValue {@link PIPELINE_DEFAULTS.maxBatchSize}
   */
  maxBatchSize?: number;
  /**
   * How long a partial batch lingers for more records before it is written. 0 (the default)
   * writes as soon as no write is running: records pushed in the same event-loop turn share a
   * write, records pushed during a write share the next one, and nothing waits on a timer (a
   * fixed linger caps a worker at one batch per linger when units are small).
   * @defaultValue {@link PIPELINE_DEFAULTS.maxBatchAgeMs}
   */
  maxBatchAgeMs?: number;
  /**
   * Records queued or being written before `push` makes its caller wait (backpressure to the
   * producer when the pipeline is saturated). @defaultValue {@link PIPELINE_DEFAULTS.maxPendingRecords}
   */
  maxPendingRecords?: number;
}

interface Owner<R> {
  results: R[];
  remaining: number;
  resolve(results: R[]): void;
  reject(err: unknown): void;
}

interface Slot<T, R> {
  item: T;
  owner: Owner<R>;
  index: number;
}

/**
 * Groups records from many `push` calls into batches, one write at a time: a full batch is
 * written at once, a partial one when no write is running (or after `maxBatchAgeMs`, if set). Each `push` resolves with one result per record once every batch holding its records
 * was flushed.
 */
export class Batcher<T, R> {
  private readonly maxBatchSize: number;
  private readonly maxBatchAgeMs: number;
  private readonly maxPendingRecords: number;
  private queue: Array<Slot<T, R>> = [];
  private inFlight = 0;
  private timer: { cancel(): void } | undefined;
  private flushing: Promise<void> | undefined;
  private spaceWaiters: Array<() => void> = [];

  constructor(
    private readonly flushFn: (items: T[]) => Promise<R[]>,
    options: BatcherOptions = {},
  ) {
    this.maxBatchSize = options.maxBatchSize ?? PIPELINE_DEFAULTS.maxBatchSize;
    this.maxBatchAgeMs = options.maxBatchAgeMs ?? PIPELINE_DEFAULTS.maxBatchAgeMs;
    this.maxPendingRecords = options.maxPendingRecords ?? PIPELINE_DEFAULTS.maxPendingRecords;
  }

  /** Records queued or in flight. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  async push(items: readonly T[]): Promise<R[]> {
    if (items.length === 0) return [];
    // Admit a push larger than the cap when the pipeline is empty, so it cannot wait forever.
    while (this.pending > 0 && this.pending + items.length > this.maxPendingRecords) {
      await new Promise<void>((resolve) => this.spaceWaiters.push(resolve));
    }
    const done = new Promise<R[]>((resolve, reject) => {
      const owner: Owner<R> = { results: new Array<R>(items.length), remaining: items.length, resolve, reject };
      items.forEach((item, index) => this.queue.push({ item, owner, index }));
    });
    if (this.queue.length >= this.maxBatchSize) this.kick();
    else this.timer ??= this.after(this.maxBatchAgeMs);
    return done;
  }

  /** Writes everything queued now; resolves when the queue is empty. */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.flushing) {
      this.kick();
      await this.flushing;
    }
  }

  private kick(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.flushing ??= this.run().finally(() => {
      this.flushing = undefined;
      if (this.queue.length > 0) this.timer ??= this.after(this.queue.length >= this.maxBatchSize ? 0 : this.maxBatchAgeMs);
    });
  }

  /** Kicks after `ms`; 0 means at the end of this event-loop turn (after the pushes it holds). */
  private after(ms: number): { cancel(): void } {
    if (ms <= 0) {
      const immediate = setImmediate(() => this.kick());
      return { cancel: () => clearImmediate(immediate) };
    }
    const timeout = setTimeout(() => this.kick(), ms);
    return { cancel: () => clearTimeout(timeout) };
  }

  private async run(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatchSize);
      this.inFlight = batch.length;
      try {
        const results = await this.flushFn(batch.map((s) => s.item));
        batch.forEach((slot, i) => {
          slot.owner.results[slot.index] = results[i] as R;
          if (--slot.owner.remaining === 0) slot.owner.resolve(slot.owner.results);
        });
      } catch (err) {
        for (const slot of batch) slot.owner.reject(err);
      } finally {
        this.inFlight = 0;
        for (const w of this.spaceWaiters.splice(0)) w();
      }
      // A partial batch goes through after()'s turn (or linger) so pushes of this turn join it.
      if (this.queue.length < this.maxBatchSize) return;
    }
  }
}
