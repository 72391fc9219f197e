import { DEFAULT_REDIS_PREFIX, VenueName, parseOrThrow, ValidationError } from '@tickfleet/core';

/**
 * Default Redis key prefix of every tickfleet queue. It holds no `{`, so the hash tag of each key
 * is the venue tag in the queue name (see {@link queueNameFor}).
 */
export const QUEUE_PREFIX = DEFAULT_REDIS_PREFIX;

/**
 * Queue name of a venue: `{binance}`. BullMQ keys are `<prefix>:<queue>:<suffix>`, so every key of
 * one venue's queue (wait, active, limiter, meta, each job hash…) carries the hash tag `binance`
 * and lands in one Redis Cluster slot, which BullMQ's multi-key Lua scripts require. One tag per
 * venue (rather than one `{tickfleet}` tag for everything) spreads venues over the cluster.
 */
export function queueNameFor(venue: string): string {
  parseOrThrow(VenueName, venue, 'venue');
  return `{${venue}}`;
}

/** Checks a key prefix: non-empty, no `{`/`}` (it would become the hash tag), no trailing `:`. */
export function assertPrefix(prefix: string): string {
  if (!/^[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)*$/.test(prefix)) {
    throw new ValidationError('prefix', 'a Redis key prefix of [A-Za-z0-9_.-] segments joined by ":" (no braces)', prefix);
  }
  return prefix;
}

/**
 * Key of a per-venue tickfleet record beside the venue's queue, in the same cluster slot:
 * `<prefix>:venue:{binance}:<suffix>`. Kept out of the BullMQ key space (`<prefix>:{binance}:…`)
 * so no job id can collide with it.
 */
export function venueKey(prefix: string, venue: string, suffix: string): string {
  parseOrThrow(VenueName, venue, 'venue');
  return `${assertPrefix(prefix)}:venue:{${venue}}:${suffix}`;
}
