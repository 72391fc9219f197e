import { ValidationError } from '@tickfleet/core';

/**
 * A fixed-capacity FIFO: once full, each push drops the oldest item, so a history kept for an
 * hour at a fixed sampling interval never grows past its capacity however long the process runs.
 */
export class RingBuffer<T> {
  private readonly items: (T | undefined)[];
  private start = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new ValidationError('capacity', 'a positive integer', capacity);
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count < this.capacity) {
      this.items[(this.start + this.count) % this.capacity] = item;
      this.count++;
      return;
    }
    this.items[this.start] = item;
    this.start = (this.start + 1) % this.capacity;
  }

  /** The newest item, or undefined when empty. */
  last(): T | undefined {
    return this.count === 0 ? undefined : this.items[(this.start + this.count - 1) % this.capacity];
  }

  /** Every item, oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.items[(this.start + i) % this.capacity] as T);
    return out;
  }
}

/**
 * Per-second rates of a monotonic counter sampled at `timesMs`: entry i is the increase from
 * sample i-1 to i divided by the time between them, null for the first sample (no previous one)
 * and for samples not later than the previous one. A counter that went down was reset (its
 * source started over from 0), so the increase since the reset is its new value, as Prometheus'
 * `rate()` counts it; the drop never shows as a negative rate.
 */
export function counterRates(timesMs: readonly number[], values: readonly number[]): (number | null)[] {
  if (timesMs.length !== values.length) throw new ValidationError('values', `one value per sample time (${timesMs.length})`, values.length);
  return values.map((value, i) => {
    if (i === 0) return null;
    const dtMs = timesMs[i]! - timesMs[i - 1]!;
    if (dtMs <= 0) return null;
    return (counterIncrease(values[i - 1]!, value) * 1000) / dtMs;
  });
}

/** The increase of a counter from `prev` to `cur`; a decrease is a reset, so the increase is `cur`. */
export function counterIncrease(prev: number, cur: number): number {
  return cur >= prev ? cur - prev : cur;
}
