import type { MockVenueName, StreamVenueName } from './scenario.js';

/** Server-side latency of answered requests (arrival to the last byte written), injected latency included. */
export interface LatencySummary {
  /** Answered requests the percentiles cover (the most recent 4096). */
  count: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** One limit's ground truth where a venue has several (Polymarket: the CLOB `/book` and Gamma `/markets`). */
export interface LimitGroupStats {
  limit: number;
  windowMs: number;
  /** True when the window slides (Polymarket), false for clock-aligned windows. */
  sliding: boolean;
  weightUsed: number;
  /** Largest accepted weight in any one window (any sliding window where `sliding`). Never above `limit` while enabled. */
  maxWindowWeight: number;
  currentWindowWeight: number;
  /** Requests beyond this limit: queued or refused. */
  overLimitRequests: number;
  delayedRequests: number;
  /** Accepted weight per clock-aligned bucket of `windowMs` (latest 64). */
  windows: Array<{ startMs: number; weight: number }>;
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
  /** Length of the window: clock-aligned (`start = floor(now / windowMs) * windowMs`), sliding on Polymarket. */
  windowMs: number;
  /**
   * Largest accepted weight in any one window (any sliding window on Polymarket). Never above `limit` while the limiter is enabled,
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
  /** Accepted weight of the latest aligned windows (up to 64, oldest first; may include buckets of queued requests). */
  windows: Array<{ startMs: number; weight: number }>;
  /**
   * Polymarket only: each limit of its own (`clob` for `/book`, `books` for `POST /books`, `gamma` for `/markets`). The venue-level
   * `limit`, `windowMs`, `maxWindowWeight`, `currentWindowWeight` and `windows` above are the CLOB's;
   * `weightUsed`, `overLimitRequests` and `delayedRequests` count both.
   */
  groups?: Record<'clob' | 'books' | 'gamma', LimitGroupStats>;
  /** Counters of limits a venue enforces besides its window (Finnhub: `maxPerSecond`, `burstRejected`, `burstLimitPerSecond`). */
  extra?: Record<string, number>;
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
  /** The WebSocket emulations (`/binance/ws`, `/binance/stream`, `/kraken/v2`). */
  streams: Record<StreamVenueName, StreamStats>;
}

/**
 * Ground truth of one venue's WebSocket endpoints since start or the last reset. "Data messages" are
 * trades, book diffs and book updates; every one a connection was due is exactly one of sent, gap,
 * garbled (binary or text) or silenced.
 */
export interface StreamStats {
  /** Upgrades accepted. */
  connections: number;
  /** Connections open now. */
  openConnections: number;
  /** Upgrades refused with 429 by the connection-attempt limit. */
  connectionsRefused: number;
  /** Data messages sent intact. */
  messagesSent: number;
  /** Data messages skipped by `gapEvery`. */
  gapsInjected: number;
  /** Data messages replaced by a binary frame. */
  binaryFrames: number;
  /** Data messages replaced by truncated JSON text. */
  garbledFrames: number;
  /** Data messages dropped during a silence window. */
  silencedMessages: number;
  /** Connections dropped by `disconnectEvery`. */
  disconnects: number;
  /** Kraken book messages sent with a wrong checksum (`checksumCorruptionRate`). */
  checksumCorruptions: number;
  /** Connections closed 1008 for more than 5 incoming messages in a second (Binance). */
  rateLimitCloses: number;
  /** Subscriptions requested and accepted (URL streams included). */
  subscriptions: number;
}
