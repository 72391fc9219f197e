export interface BatcherOptions {
  /** A batch is written as soon as this many records wait. @defaultValue 500 */
  maxBatchSize?: number;
  /** A batch is written at the latest this long after its first record arrived. @defaultValue 100 */
  maxBatchAgeMs?: number;
  /**
   * Records queued or being written before `push` makes its caller wait (backpressure to the
   * producer when the pipeline is saturated). @defaultValue 10000
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
 * Groups records from many `push` calls into batches flushed by size or age, one flush at a
 * time. Each `push` resolves with one result per record once every batch holding its records
 * was flushed.
 */
export class Batcher<T, R> {
  private readonly maxBatchSize: number;
  private readonly maxBatchAgeMs: number;
  private readonly maxPendingRecords: number;
  private queue: Array<Slot<T, R>> = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private spaceWaiters: Array<() => void> = [];

  constructor(
    private readonly flushFn: (items: T[]) => Promise<R[]>,
    options: BatcherOptions = {},
  ) {
    this.maxBatchSize = options.maxBatchSize ?? 500;
    this.maxBatchAgeMs = options.maxBatchAgeMs ?? 100;
    this.maxPendingRecords = options.maxPendingRecords ?? 10_000;
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
    else this.timer ??= setTimeout(() => this.kick(), this.maxBatchAgeMs);
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
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.flushing ??= this.run().finally(() => {
      this.flushing = undefined;
      if (this.queue.length > 0) this.timer ??= setTimeout(() => this.kick(), this.queue.length >= this.maxBatchSize ? 0 : this.maxBatchAgeMs);
    });
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
      // A partial batch waits for its age unless more records arrived meanwhile.
      if (this.queue.length < this.maxBatchSize) return;
    }
  }
}
