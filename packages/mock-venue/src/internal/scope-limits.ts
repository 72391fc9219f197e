import type { EmulatedLimit } from '../scenario.js';
import type { ScopeStats } from '../stats.js';
import { WindowLimiter } from './window-limiter.js';

/** Accepted arrivals each scope keeps for `stats().venues.<venue>.scopes.<scope>.arrivals`. */
const ARRIVAL_LOG = 2048;

/**
 * One scope's own limit (Xetra: a market, each allowed the venue's whole limit) and its ground
 * truth: requests, those beyond its limit, and the arrival time of every accepted request
 * (the latest 2048), from which tests read the spacing the fleet kept.
 */
export class ScopeLimits {
  readonly limiter: WindowLimiter;
  requests = 0;
  overLimitRequests = 0;
  private readonly arrivals: number[] = [];

  constructor(settings: EmulatedLimit) {
    this.limiter = new WindowLimiter(settings, 'reject');
  }

  accepted(nowMs: number): void {
    this.arrivals.push(nowMs);
    if (this.arrivals.length > ARRIVAL_LOG) this.arrivals.splice(0, this.arrivals.length - ARRIVAL_LOG);
  }

  stats(nowMs: number): ScopeStats {
    const l = this.limiter;
    return {
      requests: this.requests,
      weightUsed: l.weightUsed,
      limit: l.limit,
      windowMs: l.windowMs,
      maxWindowWeight: l.maxWindowWeight,
      currentWindowWeight: l.usedWeight(nowMs),
      overLimitRequests: this.overLimitRequests,
      windows: l.history(),
      arrivals: [...this.arrivals],
    };
  }
}
