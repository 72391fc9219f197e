import type { MockVenueName } from './scenario.js';

/** Server-side latency of answered requests (arrival to the last byte written), injected latency included. */
export interface LatencySummary {
  /** Answered requests the percentiles cover (the most recent 4096). */
  count: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * Ground-truth accounting of one emulated venue since start or the last reset. Fleet tests and benchmarks
 * judge budget safety by `maxWindowWeight <= limit` and `overLimitRequests === 0`.
 */
export interface VenueStats {
  /** Every request that arrived under the venue's prefix (outage drops, storms and rejections included). */
  requests: number;
  /** Total weight the venue's limiter accepted (1 per request except on Binance). Rejected requests spend nothing. */
  weightUsed: number;
  /** The venue's allowance per window. */
  limit: number;
  /** Length of the clock-aligned window (`start = floor(now / windowMs) * windowMs`). */
  windowMs: number;
  /**
   * Largest accepted weight in any one aligned window. Never above `limit` while the limiter is enabled,
   * except on a venue limited per scope (Xetra), whose venue figures add up its scopes: see `scopes`.
   */
  maxWindowWeight: number;
  /** Accepted weight in the current window. */
  currentWindowWeight: number;
  /**
   * Requests that arrived beyond the limit: those answered 429 or 418 by the limiter, those arriving during
   * a ban, and (Polymarket) those queued into a later window or refused after `maxDelayMs`.
   * Storm 429s are not counted here (the client was within its limit).
   */
  overLimitRequests: number;
  responses2xx: number;
  /** 4xx other than 429 and 418 (bad symbol, unknown token, missing API key, unknown file, …). */
  responses4xx: number;
  /** Every 429: limiter and storm. */
  responses429: number;
  responses418: number;
  /** Injected 5xx errors. */
  responses5xx: number;
  /** Polymarket: requests held back into a later window, then served. */
  delayedRequests: number;
  /** Requests held unanswered by the timeout control. */
  timeouts: number;
  /** Connections destroyed unanswered during outages. */
  outageDrops: number;
  /** Successful responses sent malformed. */
  malformedResponses: number;
  /** 429s caused by a storm window. */
  stormResponses: number;
  /** Ban end (epoch ms) while a Binance ban is in force. */
  bannedUntilMs: number | null;
  /** Bans issued since reset (each one doubles the next). */
  bans: number;
  latency: LatencySummary;
  /** Accepted weight of the latest aligned windows (up to 64, oldest first; may include booked future windows). */
  windows: Array<{ startMs: number; weight: number }>;
  /** Venues limited per scope (Xetra: per market): each scope's own accounting, by scope name. */
  scopes?: Record<string, ScopeStats>;
}

/** One scope (Xetra market) of a venue limited per scope: the venue's limit applies to each scope alone. */
export interface ScopeStats {
  requests: number;
  weightUsed: number;
  limit: number;
  windowMs: number;
  /** Largest accepted weight in any one aligned window of this scope; never above `limit` while the limiter is enabled. */
  maxWindowWeight: number;
  currentWindowWeight: number;
  /** Requests of this scope answered 429 by its limiter. */
  overLimitRequests: number;
  windows: Array<{ startMs: number; weight: number }>;
  /** Arrival times (epoch ms, the emulation's clock) of the latest 2048 accepted requests, in arrival order. */
  arrivals: number[];
}

/** `GET /_mock/stats`. */
export interface MockVenueStats {
  startedAtMs: number;
  /** When the counters were last cleared (start or `POST /_mock/reset`). */
  resetAtMs: number;
  venues: Record<MockVenueName, VenueStats>;
}
