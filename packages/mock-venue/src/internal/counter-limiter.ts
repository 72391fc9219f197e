import type { EmulatedLimit } from '../scenario.js';
import type { LimitDecision, VenueLimiter } from './window-limiter.js';

const HISTORY_WINDOWS = 64;

/**
 * Kraken's call counter (docs.kraken.com, "Spot REST Rate Limits"): every call adds its cost to a
 * counter that decays continuously; a call that would take the counter past its maximum (`limit`) is
 * refused. The counter drains from full to 0 in `windowMs`. Ground truth beside it: accepted weight
 * per clock-aligned `windowMs` window (`history`), and the highest counter value reached
 * (`maxWindowWeight`), never above `limit` while enabled.
 */
export class CounterLimiter implements VenueLimiter {
  private counter = 0;
  private atMs = 0;
  private peak = 0;
  private totalWeight = 0;
  private readonly weights = new Map<number, number>();

  constructor(private settings: EmulatedLimit) {}

  get limit(): number {
    return this.settings.limit;
  }

  get windowMs(): number {
    return this.settings.windowMs;
  }

  get weightUsed(): number {
    return this.totalWeight;
  }

  /** The highest the counter has been since the last reset. */
  get maxWindowWeight(): number {
    return this.peak;
  }

  get banCount(): number {
    return 0;
  }

  update(settings: EmulatedLimit): void {
    this.settings = settings;
  }

  reset(): void {
    this.counter = 0;
    this.atMs = 0;
    this.peak = 0;
    this.totalWeight = 0;
    this.weights.clear();
  }

  /** The counter's value at `nowMs`. */
  usedWeight(nowMs: number): number {
    return this.decayed(nowMs);
  }

  decide(nowMs: number, weight: number): LimitDecision {
    const s = this.settings;
    const counter = this.decayed(nowMs);
    if (s.enabled && counter + weight > s.limit + 1e-9) {
      return { kind: 'reject', retryAfterMs: Math.ceil(((counter + weight - s.limit) * s.windowMs) / s.limit) };
    }
    this.counter = counter + weight;
    this.atMs = nowMs;
    if (this.counter > this.peak) this.peak = this.counter;
    this.totalWeight += weight;
    const start = Math.floor(nowMs / s.windowMs) * s.windowMs;
    this.weights.set(start, (this.weights.get(start) ?? 0) + weight);
    if (this.weights.size > 2 * HISTORY_WINDOWS) {
      const keys = [...this.weights.keys()].sort((a, b) => a - b);
      for (const k of keys.slice(0, keys.length - HISTORY_WINDOWS)) this.weights.delete(k);
    }
    return { kind: 'accept', delayMs: 0 };
  }

  bannedUntil(): number | null {
    return null;
  }

  history(): Array<{ startMs: number; weight: number }> {
    return [...this.weights.entries()].sort((a, b) => a[0] - b[0]).map(([startMs, weight]) => ({ startMs, weight }));
  }

  private decayed(nowMs: number): number {
    const drained = (Math.max(0, nowMs - this.atMs) * this.settings.limit) / this.settings.windowMs;
    return Math.max(0, this.counter - drained);
  }
}
