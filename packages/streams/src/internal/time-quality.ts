import type { TimeQuality } from '../stream-session.js';

/** Skews kept for the percentiles: enough for a stable p99, small enough to sort on every stats() call. */
export const TIME_QUALITY_WINDOW = 2048;
const SUMMARY_EVERY_MS = 1000;

/** Receive-minus-exchange time of recent data messages, and messages whose exchange time went backwards. */
export class TimeQualityTracker {
  private readonly skews: number[] = [];
  private next = 0;
  private outOfOrder = 0;
  private readonly lastExchangeMs = new Map<string, number>();
  private cached: { p50: number; p99: number } | undefined;
  private cachedAt = 0;

  /** `key` names one ordered feed (symbol and channel): exchange times are compared within it only. */
  observe(key: string, exchangeMs: number, receivedAtMs: number): void {
    const skew = receivedAtMs - exchangeMs;
    if (this.skews.length < TIME_QUALITY_WINDOW) this.skews.push(skew);
    else this.skews[this.next] = skew;
    this.next = (this.next + 1) % TIME_QUALITY_WINDOW;
    const last = this.lastExchangeMs.get(key);
    if (last !== undefined && exchangeMs < last) this.outOfOrder += 1;
    else this.lastExchangeMs.set(key, exchangeMs);
  }

  /** Percentiles are recomputed at most once a second (real time): `stats()` may be polled often, and sorting the window is not free. */
  summary(): TimeQuality {
    if (this.skews.length === 0) return { skewP50Ms: null, skewP99Ms: null, outOfOrder: this.outOfOrder };
    const now = performance.now();
    if (!this.cached || now - this.cachedAt >= SUMMARY_EVERY_MS) {
      const sorted = [...this.skews].sort((a, b) => a - b);
      const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
      this.cached = { p50: at(0.5), p99: at(0.99) };
      this.cachedAt = now;
    }
    return { skewP50Ms: this.cached.p50, skewP99Ms: this.cached.p99, outOfOrder: this.outOfOrder };
  }
}
