import { systemClock, type Clock } from '@tickfleet/core';
import { PIPELINE_DEFAULTS } from './sink-defaults.js';

export interface DedupWindowOptions {
  /** How long a key is remembered. @defaultValue {@link PIPELINE_DEFAULTS.dedupWindowMs} */
  windowMs?: number;
  /** Keys remembered at most; the oldest go first. @defaultValue {@link PIPELINE_DEFAULTS.dedupMaxKeys} */
  maxKeys?: number;
  clock?: Clock;
}

/**
 * In-memory filter of recently stored keys, bounded by age and count (memory never grows past
 * `maxKeys` entries). A Map keeps insertion order, which is time order, so eviction pops from
 * the front.
 */
export class DedupWindow {
  readonly windowMs: number;
  readonly maxKeys: number;
  private readonly clock: Clock;
  private readonly seen = new Map<string, number>();

  constructor(options: DedupWindowOptions = {}) {
    this.windowMs = options.windowMs ?? PIPELINE_DEFAULTS.dedupWindowMs;
    this.maxKeys = Math.max(1, options.maxKeys ?? PIPELINE_DEFAULTS.dedupMaxKeys);
    this.clock = options.clock ?? systemClock;
  }

  /** Keys remembered now (expired ones are let go first). */
  get size(): number {
    this.evictExpired();
    return this.seen.size;
  }

  has(key: string): boolean {
    this.evictExpired();
    return this.seen.has(key);
  }

  /** Remembers `key` (its first sighting time is kept). */
  add(key: string): void {
    this.evictExpired();
    if (this.seen.has(key)) return;
    while (this.seen.size >= this.maxKeys) {
      const oldest = this.seen.keys().next();
      if (oldest.done) break;
      this.seen.delete(oldest.value);
    }
    this.seen.set(key, this.clock.now());
  }

  private evictExpired(): void {
    const cutoff = this.clock.now() - this.windowMs;
    for (const [key, at] of this.seen) {
      if (at > cutoff) return;
      this.seen.delete(key);
    }
  }
}
