import { renewEveryMsFor } from '@tickfleet/core';

/**
 * Defaults of the fleet's streams, in one place: the worker's environment schema, the runner, the
 * leases and the sessions take them from here, so a default changes once.
 */
export const STREAM_DEFAULTS = Object.freeze({
  /** Lease and membership lifetime: a dead worker's streams free up after about this long. */
  leaseTtlMs: 5000,
  /** How often a worker reads the stream definitions' version (one cheap query; the list only when it moved). */
  definitionsPollMs: 5000,
  /** A connection that received nothing (no data, heartbeat or ping) for this long is closed and reopened. */
  silenceTimeoutMs: 10_000,
  /** Longest a graceful stop waits to hand its leases over before leaving them to expire. */
  releaseTimeoutMs: 5000,
  /** A holder's published live state outlives this many stats cycles, so a dead holder's state vanishes soon after it. */
  liveKeyTtlFactor: 3,
  /** Levels of the REST depth snapshot a Binance stream's book starts from (weight 50). */
  binanceBookDepth: 1000,
  /** Levels a Kraken stream's book subscribes to (Kraken's smallest depth). */
  krakenBookDepth: 10,
});

/** Floor of the stats cycle: under a very short lease lifetime (tests use a few hundred ms) it would publish every few ms. */
const MIN_STATS_EVERY_MS = 200;
/** Floor of a published live state's lifetime: it stays readable for a second even under a very short lease lifetime. */
const MIN_LIVE_TTL_MS = 1000;

/** How often a runner publishes its held streams' live state and moves their metrics: with the lease renewals, not faster than 200 ms. */
export function streamStatsEveryMs(ttlMs: number): number {
  return Math.max(MIN_STATS_EVERY_MS, renewEveryMsFor(ttlMs));
}

/** The lifetime of a published live state under a lease lifetime of `ttlMs` (see {@link STREAM_DEFAULTS.liveKeyTtlFactor}). */
export function streamLiveTtlMs(ttlMs: number): number {
  return Math.max(MIN_LIVE_TTL_MS, STREAM_DEFAULTS.liveKeyTtlFactor * renewEveryMsFor(ttlMs));
}
