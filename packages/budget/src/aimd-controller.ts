import { systemClock, type Clock } from '@tickfleet/core';
import { DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';

/** What one AIMD step did to the concurrency. */
export type AimdChange = 'increase' | 'decrease' | 'halve' | 'none';

export interface AimdStep {
  concurrency: number;
  change: AimdChange;
}

export interface AimdOutcome {
  ok: boolean;
  latencyMs: number;
}

/**
 * Additive-increase / multiplicative-decrease of one venue's concurrency, in process. The rules
 * are the ones `FleetVenueControl` runs atomically in Redis for the whole fleet (and the tests
 * check both agree); this class serves single-process use and documents the rules:
 * - a rate limit (429/418) halves the concurrency (floor `min`), once per `halveCooldownMs`;
 * - once `minSamples` outcomes are in the window, a failure ratio above `maxFailureRatio` or a p95
 *   latency above `maxP95LatencyMs` subtracts one (floor `min`) and starts a new window;
 * - `increaseAfterMs` of clean operation since the window began (no rate limit, ratio and p95
 *   within bounds, at least one outcome) adds one (ceiling `max`) and starts a new window, so the
 *   concurrency grows by at most one per `increaseAfterMs`.
 */
export class AimdController {
  private c: number;
  private windowStartMs: number;
  private n = 0;
  private failures = 0;
  private latencies: number[] = [];
  private lastHalvedMs = Number.NEGATIVE_INFINITY;
  private frozenUntilMs = 0;

  constructor(
    private limits: AimdLimits = DEFAULT_AIMD_LIMITS,
    private readonly clock: Clock = systemClock,
  ) {
    this.c = limits.max;
    this.windowStartMs = clock.now();
  }

  get concurrency(): number {
    return this.c;
  }

  /** Changes the bounds (connector edited); the concurrency is clamped into them. */
  setLimits(limits: AimdLimits): void {
    this.limits = limits;
    this.c = clamp(this.c, limits.min, limits.max);
  }

  /** Holds increases until `untilMs` (only ever extends). */
  freeze(untilMs: number): void {
    this.frozenUntilMs = Math.max(this.frozenUntilMs, untilMs);
  }

  /** A 429/418: halve (once per incident) and hold increases until `frozenUntilMs`. */
  onRateLimited(frozenUntilMs = 0): AimdStep {
    const now = this.clock.now();
    this.frozenUntilMs = Math.max(this.frozenUntilMs, frozenUntilMs);
    let change: AimdChange = 'none';
    if (now - this.lastHalvedMs >= this.limits.halveCooldownMs) {
      this.c = Math.max(this.limits.min, Math.floor(this.c / 2));
      this.lastHalvedMs = now;
      change = 'halve';
    }
    this.resetWindow(now);
    return { concurrency: this.c, change };
  }

  /** One finished request or unit. */
  reportOutcome(outcome: AimdOutcome): AimdStep {
    const now = this.clock.now();
    const { min, max, minSamples, sampleSize, maxFailureRatio, maxP95LatencyMs, increaseAfterMs } = this.limits;
    this.c = clamp(this.c, min, max);
    this.n += 1;
    if (!outcome.ok) this.failures += 1;
    this.latencies.push(outcome.latencyMs);
    if (this.latencies.length > sampleSize) this.latencies.shift();

    if (this.n >= minSamples && (this.failures / this.n > maxFailureRatio || p95(this.latencies) > maxP95LatencyMs)) {
      const before = this.c;
      this.c = Math.max(min, this.c - 1);
      this.resetWindow(now);
      return { concurrency: this.c, change: this.c < before ? 'decrease' : 'none' };
    }
    if (now - this.windowStartMs >= increaseAfterMs && this.frozenUntilMs <= now) {
      const clean = this.failures / this.n <= maxFailureRatio && p95(this.latencies) <= maxP95LatencyMs;
      const before = this.c;
      if (clean && this.c < max) this.c += 1;
      this.resetWindow(now);
      return { concurrency: this.c, change: this.c > before ? 'increase' : 'none' };
    }
    return { concurrency: this.c, change: 'none' };
  }

  private resetWindow(now: number): void {
    this.windowStartMs = now;
    this.n = 0;
    this.failures = 0;
    this.latencies = [];
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

/** Nearest-rank p95 (the value at rank ceil(0.95 n)); 0 for no samples. */
export function p95(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(0.95 * sorted.length) - 1)] ?? 0;
}
