import { GUARD_DEFAULTS } from './budget-defaults.js';

/**
 * The least end-of-window guard: 5% of the period, at most 1 s (500 ms of a 10 s window, 1 s of
 * Binance's minute). It applies before any latency was measured, and is the floor of
 * {@link windowGuardMs} (measured: with 6 units in flight and a 120-weight window, one request in
 * ~5 loaded runs went over the limit with less).
 */
export function boundaryGuardMs(periodMs: number): number {
  return Math.min(1000, Math.floor(periodMs * 0.05));
}

/**
 * A smoothed latency and its mean deviation, as TCP estimates a round trip (RFC 6298: gains 1/8
 * and 1/4), so {@link upperMs} follows both a slower link and a jittery one within a few samples.
 */
export class LatencyEstimate {
  private srtt = Number.NaN;
  private rttvar = 0;

  observe(sampleMs: number): void {
    if (!Number.isFinite(sampleMs) || sampleMs < 0) return;
    if (Number.isNaN(this.srtt)) {
      this.srtt = sampleMs;
      this.rttvar = sampleMs / 2;
      return;
    }
    this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - sampleMs);
    this.srtt = 0.875 * this.srtt + 0.125 * sampleMs;
  }

  /** Mean plus `GUARD_DEFAULTS.deviations` mean deviations; 0 before the first sample. */
  upperMs(): number {
    return Number.isNaN(this.srtt) ? 0 : this.srtt + GUARD_DEFAULTS.deviations * this.rttvar;
  }
}

/**
 * How long before a fixed window's end (on this worker's clock) a request may no longer be sent:
 * the request's own measured latency to the venue (upper estimate of whole requests, which bounds
 * the trip to the venue), plus a margin, within [{@link boundaryGuardMs}, half the window]. The
 * round trip to the budget is not in it: a grant's window end is placed on this worker's clock
 * from the moment its acquire was sent, so a slow reply only shortens the grant's validity.
 */
export function windowGuardMs(periodMs: number, venueLatencyUpperMs: number): number {
  const wanted = Math.ceil(venueLatencyUpperMs + GUARD_DEFAULTS.marginMs);
  return Math.min(Math.floor(periodMs * GUARD_DEFAULTS.maxShare), Math.max(boundaryGuardMs(periodMs), wanted));
}
