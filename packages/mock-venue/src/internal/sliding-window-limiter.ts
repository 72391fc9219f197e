import type { EmulatedLimit } from '../scenario.js';
import type { LimitDecision, OverLimitMode } from './window-limiter.js';

const HISTORY_BUCKETS = 64;

/**
 * A limit over a sliding window, as Polymarket documents its Cloudflare throttling ("limits reset on
 * sliding time windows"): a request is accepted at `t` only while the weight accepted in `(t - windowMs, t]`
 * stays within the limit, wherever the window boundary would fall. A client pacing itself by clock-aligned
 * windows can put up to twice the limit into one sliding window (the end of one aligned window plus the
 * start of the next); this limiter sees that and throttles it.
 *
 * Over the limit, `delay` mode queues the request (first in, first out, as Cloudflare's queue) to the first
 * moment the window has room, if that is within `maxDelayMs`, else answers 429; `reject` mode answers 429.
 * Ground truth: `maxWindowWeight` is the largest weight accepted in any sliding window, `history()` the
 * accepted weight per clock-aligned bucket of `windowMs` (for reading, not for limiting).
 */
export class SlidingWindowLimiter {
  /** Accept times, one entry per weight unit, ascending, from index `head`; may hold queued (future) times. */
  private times: number[] = [];
  private head = 0;
  private readonly buckets = new Map<number, number>();
  private maxWeight = 0;
  private totalWeight = 0;
  /** Arrivals beyond the limit (queued or refused) and those queued, counted per limiter. */
  overLimit = 0;
  delayed = 0;

  constructor(
    private settings: EmulatedLimit,
    private readonly mode: Exclude<OverLimitMode, 'ban'>,
  ) {}

  get limit(): number {
    return this.settings.limit;
  }

  get windowMs(): number {
    return this.settings.windowMs;
  }

  update(settings: EmulatedLimit): void {
    if (settings.windowMs !== this.settings.windowMs) this.buckets.clear();
    this.settings = settings;
  }

  reset(): void {
    this.times = [];
    this.head = 0;
    this.buckets.clear();
    this.maxWeight = 0;
    this.totalWeight = 0;
    this.overLimit = 0;
    this.delayed = 0;
  }

  /** Weight accepted in the sliding window ending at `nowMs` (queued requests not yet released excluded). */
  usedWeight(nowMs: number): number {
    return this.upperBound(nowMs) - this.upperBound(nowMs - this.settings.windowMs);
  }

  decide(nowMs: number, weight: number): LimitDecision {
    const { limit, windowMs, enabled, maxDelayMs } = this.settings;
    this.prune(nowMs);
    if (!enabled) {
      this.book(nowMs, weight);
      return { kind: 'accept', delayMs: 0 };
    }
    const n = this.times.length - this.head;
    if (weight > limit) {
      this.overLimit += 1;
      return { kind: 'reject', retryAfterMs: windowMs };
    }
    // Behind a queue the request waits its turn; then the (limit - weight + 1)-th newest accept must
    // have left the window for this one to fit.
    let at = Math.max(nowMs, this.times[this.times.length - 1] ?? nowMs);
    const evict = n - limit + weight - 1;
    const freeAt = evict >= 0 ? (this.times[this.head + evict] ?? 0) + windowMs : nowMs;
    at = Math.max(at, freeAt);
    if (at === nowMs) {
      this.book(nowMs, weight);
      return { kind: 'accept', delayMs: 0 };
    }
    this.overLimit += 1;
    if (this.mode === 'delay' && at - nowMs <= maxDelayMs) {
      this.delayed += 1;
      this.book(at, weight);
      return { kind: 'accept', delayMs: at - nowMs };
    }
    return { kind: 'reject', retryAfterMs: Math.max(1, freeAt - nowMs) };
  }

  bannedUntil(): null {
    return null;
  }

  get banCount(): number {
    return 0;
  }

  get weightUsed(): number {
    return this.totalWeight;
  }

  /** Largest weight accepted in any sliding window of `windowMs` since the last reset. */
  get maxWindowWeight(): number {
    return this.maxWeight;
  }

  history(): Array<{ startMs: number; weight: number }> {
    return [...this.buckets.entries()].sort((a, b) => a[0] - b[0]).map(([startMs, weight]) => ({ startMs, weight }));
  }

  private book(at: number, weight: number): void {
    for (let i = 0; i < weight; i++) this.times.push(at);
    this.totalWeight += weight;
    const inWindow = this.times.length - this.upperBound(at - this.settings.windowMs);
    if (inWindow > this.maxWeight) this.maxWeight = inWindow;
    const start = Math.floor(at / this.settings.windowMs) * this.settings.windowMs;
    this.buckets.set(start, (this.buckets.get(start) ?? 0) + weight);
    if (this.buckets.size > 2 * HISTORY_BUCKETS) {
      const keys = [...this.buckets.keys()].sort((a, b) => a - b);
      for (const k of keys.slice(0, keys.length - HISTORY_BUCKETS)) this.buckets.delete(k);
    }
  }

  /**
   * Drops accepts that can no longer share a window with any request arriving at or after `nowMs`:
   * by moving `head` (O(log n)), compacting only when the dropped part outgrows the kept one, so a
   * window of hundreds of thousands of accepts (the limiter switched off in a benchmark) stays cheap.
   */
  private prune(nowMs: number): void {
    this.head = this.upperBound(nowMs - this.settings.windowMs);
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }

  /** Index of the first accept (from `head`) later than `x`. */
  private upperBound(x: number): number {
    let lo = this.head;
    let hi = this.times.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.times[mid] ?? 0) <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
