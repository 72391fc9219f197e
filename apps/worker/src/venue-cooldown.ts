import { createHash } from 'node:crypto';
import type { BookCooldownSettings } from '@tickfleet/core';
import type { RedisClient } from '@tickfleet/queues';

/**
 * Counts one book poll in the venue's current window (`w` = floor(now / windowMs); `n` polls, `f`
 * failed) and, on a failure that brings the window to `minPolls` polls with at least `ratio`
 * failed, starts the venue's cooldown (`KEYS[2]` = its end, expiring with it) unless one is in
 * force, then starts the count over. Returns the cooldown end (0: none) and whether this call
 * started it. One script on keys sharing the venue's hash tag, so N workers count as one.
 */
const REPORT = `
local now = tonumber(ARGV[1])
local w = math.floor(now / tonumber(ARGV[2]))
if tonumber(redis.call('HGET', KEYS[1], 'w') or '-1') ~= w then
  redis.call('HSET', KEYS[1], 'w', w, 'n', 0, 'f', 0)
end
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local f = tonumber(redis.call('HGET', KEYS[1], 'f'))
if ARGV[3] == '1' then f = redis.call('HINCRBY', KEYS[1], 'f', 1) end
local untilMs = tonumber(redis.call('GET', KEYS[2]) or '0')
if untilMs > now then return {untilMs, 0} end
if ARGV[3] == '1' and n >= tonumber(ARGV[5]) and f >= tonumber(ARGV[4]) * n then
  untilMs = now + tonumber(ARGV[6])
  redis.call('SET', KEYS[2], untilMs, 'PX', tonumber(ARGV[6]))
  redis.call('HSET', KEYS[1], 'n', 0, 'f', 0)
  return {untilMs, 1}
end
return {0, 0}`;

/** How long a worker trusts its copy of a venue's cooldown end before reading it again. */
const CHECK_MS = 500;

/**
 * The per-venue order-book cooldown, fleet-wide in Redis (`<prefix>:venue:{<venue>}:cooldown`):
 * when a large share of a venue's book polls fail within one polling interval, every worker stops
 * polling that venue's books until it ends (its units wait, delayed, without a request). It is
 * neither the per-instrument backoff (one failing market waits, the others go on) nor the 429
 * freeze (the venue refused us; every unit of the venue waits).
 */
export class VenueCooldown {
  private readonly known = new Map<string, { untilMs: number; checkedAtMs: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly now: () => number,
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  private keys(venue: string): [string, string] {
    const base = `${this.prefix}:venue:{${venue}}:cooldown`;
    return [`${base}:window`, base];
  }

  /** Counts a finished book poll; returns the cooldown end (0: none) and whether this poll started it. */
  async report(venue: string, failed: boolean, settings: BookCooldownSettings): Promise<{ untilMs: number; started: boolean }> {
    const [windowKey, cooldownKey] = this.keys(venue);
    const [untilMs, started] = (await this.redis.eval(
      REPORT,
      2,
      windowKey,
      cooldownKey,
      String(this.now()),
      String(settings.windowMs),
      failed ? '1' : '0',
      String(settings.failureRatio),
      String(settings.minPolls),
      String(settings.cooldownMs),
    )) as [number, number];
    this.known.set(venue, { untilMs: Number(untilMs), checkedAtMs: this.monotonic() });
    return { untilMs: Number(untilMs), started: Number(started) === 1 };
  }

  /** Remaining cooldown of the venue in ms (0: none), read from Redis at most every 500 ms per venue. */
  async remainingMs(venue: string): Promise<number> {
    const now = this.now();
    let entry = this.known.get(venue);
    if (!entry || this.monotonic() - entry.checkedAtMs >= CHECK_MS) {
      entry = { untilMs: Number((await this.redis.get(this.keys(venue)[1])) ?? 0), checkedAtMs: this.monotonic() };
      this.known.set(venue, entry);
    }
    return Math.max(0, entry.untilMs - now);
  }

  /** The last known remaining cooldown, without I/O (for telemetry). */
  knownRemainingMs(venue: string): number {
    return Math.max(0, (this.known.get(venue)?.untilMs ?? 0) - this.now());
  }
}

/** Largest share of a backoff the per-instrument jitter adds. */
export const BOOK_BACKOFF_JITTER = 0.25;

/**
 * A failed instrument's backoff with its jitter: `delayMs` plus up to {@link BOOK_BACKOFF_JITTER}
 * of it, the share drawn from a hash of the instrument's job id. Deterministic per instrument, so
 * the instruments of one outage spread out instead of coming back together, and one instrument's
 * retries are reproducible (the same share every time).
 */
export function jitteredBackoffMs(jobId: string, delayMs: number): number {
  const share = createHash('sha256').update(jobId).digest().readUInt32BE(0) / 0x1_0000_0000;
  return delayMs + Math.floor(delayMs * BOOK_BACKOFF_JITTER * share);
}
