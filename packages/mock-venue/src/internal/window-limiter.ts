import type { EmulatedLimit } from '../scenario.js';

/** What a venue's limiter says about one arriving request. */
export type LimitDecision = { kind: 'accept'; delayMs: number } | { kind: 'reject'; retryAfterMs: number } | { kind: 'ban'; bannedUntilMs: number };

/**
 * How the venue treats a request beyond its limit: answer 429 (`reject`), answer 429 and ban clients
 * that keep going (`ban`, Binance), or queue it and 429 only past `maxDelayMs` (`delay`, Cloudflare in
 * front of Polymarket; sliding windows only, see SlidingWindowLimiter).
 */
export type OverLimitMode = 'reject' | 'ban' | 'delay';

/** What the server asks of a venue's limiter: a decision per request, and ground-truth accounting. */
export interface VenueLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly weightUsed: number;
  readonly maxWindowWeight: number;
  readonly banCount: number;
  update(settings: EmulatedLimit): void;
  reset(): void;
  usedWeight(nowMs: number): number;
  decide(nowMs: number, weight: number): LimitDecision;
  bannedUntil(nowMs: number): number | null;
  history(): Array<{ startMs: number; weight: number }>;
}

const HISTORY_WINDOWS = 64;

/**
 * A venue's own limit over clock-aligned fixed windows (`start = floor(now / windowMs) * windowMs`), and
 * the ground-truth accounting of what it accepted per window. Only accepted weight enters a window
 * (a rejected request spends nothing), so a window's weight never exceeds the limit while the limiter is
 * enabled; arrivals beyond the limit are counted separately by the caller as `overLimitRequests`.
 */
export class WindowLimiter implements VenueLimiter {
  private readonly weights = new Map<number, number>();
  private overInWindow = 0;
  private overWindowStart = -1;
  private banUntilMs = 0;
  private bans = 0;
  private maxWeight = 0;
  private totalWeight = 0;

  constructor(
    private settings: EmulatedLimit,
    private readonly mode: Exclude<OverLimitMode, 'delay'>,
  ) {}

  get limit(): number {
    return this.settings.limit;
  }

  get windowMs(): number {
    return this.settings.windowMs;
  }

  /** New settings from a scenario PATCH; windows of a different length cannot be compared, so they restart. */
  update(settings: EmulatedLimit): void {
    if (settings.windowMs !== this.settings.windowMs) this.weights.clear();
    this.settings = settings;
  }

  reset(): void {
    this.weights.clear();
    this.overInWindow = 0;
    this.overWindowStart = -1;
    this.banUntilMs = 0;
    this.bans = 0;
    this.maxWeight = 0;
    this.totalWeight = 0;
  }

  windowStart(nowMs: number): number {
    return Math.floor(nowMs / this.settings.windowMs) * this.settings.windowMs;
  }

  /** Weight accepted so far in the window containing `nowMs` (what `X-MBX-USED-WEIGHT-1M` reports). */
  usedWeight(nowMs: number): number {
    return this.weights.get(this.windowStart(nowMs)) ?? 0;
  }

  decide(nowMs: number, weight: number): LimitDecision {
    const s = this.settings;
    if (this.mode === 'ban' && this.banUntilMs > nowMs) return { kind: 'ban', bannedUntilMs: this.banUntilMs };
    const start = this.windowStart(nowMs);
    const used = this.weights.get(start) ?? 0;
    if (!s.enabled || used + weight <= s.limit) {
      this.book(start, weight);
      return { kind: 'accept', delayMs: 0 };
    }
    const retryAfterMs = start + s.windowMs - nowMs;
    if (this.mode === 'ban') {
      if (this.overWindowStart !== start) {
        this.overWindowStart = start;
        this.overInWindow = 0;
      }
      this.overInWindow += 1;
      // the first over-limit request gets a 429; more than banAfter further ones in the window earn a ban
      if (this.overInWindow - 1 > s.banAfter) {
        this.banUntilMs = nowMs + s.banMs * 2 ** this.bans;
        this.bans += 1;
        this.overInWindow = 0;
        return { kind: 'ban', bannedUntilMs: this.banUntilMs };
      }
    }
    return { kind: 'reject', retryAfterMs };
  }

  /** Counts weight another limiter (a scope's) accepted, so the venue's totals include it; decides nothing. */
  record(nowMs: number, weight: number): void {
    this.book(this.windowStart(nowMs), weight);
  }

  /** Ban end (epoch ms) while a ban is in force, else null. */
  bannedUntil(nowMs: number): number | null {
    return this.banUntilMs > nowMs ? this.banUntilMs : null;
  }

  get banCount(): number {
    return this.bans;
  }

  get weightUsed(): number {
    return this.totalWeight;
  }

  /** Largest weight accepted in any one window since the last reset. */
  get maxWindowWeight(): number {
    return this.maxWeight;
  }

  /** Accepted weight of the most recent windows, oldest first. */
  history(): Array<{ startMs: number; weight: number }> {
    return [...this.weights.entries()].sort((a, b) => a[0] - b[0]).map(([startMs, weight]) => ({ startMs, weight }));
  }

  private book(start: number, weight: number): void {
    const w = (this.weights.get(start) ?? 0) + weight;
    this.weights.set(start, w);
    this.totalWeight += weight;
    if (w > this.maxWeight) this.maxWeight = w;
    if (this.weights.size > 2 * HISTORY_WINDOWS) {
      const keys = [...this.weights.keys()].sort((a, b) => a - b);
      for (const k of keys.slice(0, keys.length - HISTORY_WINDOWS)) this.weights.delete(k);
    }
  }
}
