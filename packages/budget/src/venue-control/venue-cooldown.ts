import type { BookCooldownSettings, Clock } from '@tickfleet/core';
import { venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { budgetCommand } from '../internal/commands.js';
import type { FleetTimeline } from './fleet-timeline.js';

/** How long a worker trusts its copy of a venue's cooldown end before reading it again. */
const CHECK_MS = 500;

/**
 * The per-venue order-book cooldown, fleet-wide in Redis (`<prefix>:venue:{<venue>}:cooldown`):
 * when a large share of a venue's book polls fail within one polling interval, every worker stops
 * polling that venue's books until it ends (its units wait, delayed, without a request). It is
 * neither the per-instrument backoff (one failing market waits, the others go on) nor the 429
 * freeze (the venue refused us; every unit of the venue waits). Reached through
 * {@link FleetVenueControl}'s `reportBookPoll` / `bookCooldownMs`. The window and the end are on
 * the fleet's timeline ({@link FleetTimeline}), whatever the reporting worker's clock says.
 */
export class VenueCooldown {
  /** The last read cooldown end per venue, on the fleet's timeline. */
  private readonly known = new Map<string, { untilMs: number; checkedAtMs: number }>();
  private readonly reportCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly clock: Clock,
    private readonly timeline: FleetTimeline,
  ) {
    this.reportCmd = budgetCommand(redis, 'reportBookPoll-2.lua');
  }

  private keys(venue: string): [window: string, cooldown: string] {
    const cooldown = venueKey(this.prefix, venue, 'cooldown');
    return [`${cooldown}:window`, cooldown];
  }

  /** Counts a finished book poll; returns the cooldown end (0: none; else on this process's clock) and whether this poll started it. */
  async report(venue: string, failed: boolean, settings: BookCooldownSettings): Promise<{ untilMs: number; started: boolean }> {
    const [untilMs, started] = (await this.reportCmd(this.keys(venue), [
      await this.timeline.now(),
      settings.windowMs,
      failed ? '1' : '0',
      settings.failureRatio,
      settings.minPolls,
      settings.cooldownMs,
    ])) as [number, number];
    this.known.set(venue, { untilMs: Number(untilMs), checkedAtMs: this.clock.monotonic() });
    return { untilMs: Number(untilMs) > 0 ? this.timeline.toLocal(Number(untilMs)) : 0, started: Number(started) === 1 };
  }

  /** Remaining cooldown of the venue in ms (0: none), read from Redis at most every 500 ms per venue. */
  async remainingMs(venue: string): Promise<number> {
    const entry = this.known.get(venue);
    const untilMs = !entry || this.clock.monotonic() - entry.checkedAtMs >= CHECK_MS ? await this.fleetUntilMs(venue) : entry.untilMs;
    return Math.max(0, untilMs - (await this.timeline.now()));
  }

  /** The end of the venue's cooldown as Redis holds it now, on the fleet's timeline (0: never started; past: over). */
  async fleetUntilMs(venue: string): Promise<number> {
    const untilMs = Number((await this.redis.get(this.keys(venue)[1])) ?? 0);
    this.known.set(venue, { untilMs, checkedAtMs: this.clock.monotonic() });
    return untilMs;
  }

  /** The last known remaining cooldown, without I/O (for telemetry). */
  knownRemainingMs(venue: string): number {
    return Math.max(0, (this.known.get(venue)?.untilMs ?? 0) - this.timeline.knownNow());
  }
}
