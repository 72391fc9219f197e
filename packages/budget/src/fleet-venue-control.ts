import { systemClock, type Clock } from '@tickfleet/core';
import { DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';
import type { AimdChange, AimdOutcome } from './aimd-controller.js';
import { luaCommand, QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';

const COMMANDS = new URL('./commands/', import.meta.url);

export type FreezeCause = '429' | '418' | 'budget' | 'manual';

export interface FleetVenueControlOptions {
  /** Key prefix (tests pass a fresh one). @defaultValue 'tickfleet' */
  prefix?: string;
  /** Source of `now` for windows and freezes. @defaultValue systemClock */
  clock?: Clock;
  /** Limits of venues not given to {@link FleetVenueControl.configure}. @defaultValue DEFAULT_AIMD_LIMITS */
  defaults?: AimdLimits;
}

export interface VenueFreeze {
  untilMs: number;
  cause: FreezeCause;
}

export interface VenueControlSnapshot {
  venue: string;
  concurrency: number;
  min: number;
  max: number;
  frozen: VenueFreeze | null;
  /** Outcomes and failures in the current AIMD window. */
  windowOutcomes: number;
  windowFailures: number;
}

export interface ControlStep {
  concurrency: number;
  change: AimdChange;
}

/**
 * Fleet-wide control of each venue in RedisClient: its freeze and its AIMD concurrency, one hash per
 * venue under the venue's hash tag. Every change is one Lua script, so any number of workers can
 * report 429s and outcomes at once and the venue sees one controller, not N fighting ones.
 * The caller applies a changed concurrency to the venue's queue (`applyConcurrency` in
 * `@tickfleet/queues`) and a freeze to its limiter (`VenueQueues.freeze`).
 */
export class FleetVenueControl {
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly defaults: AimdLimits;
  private readonly limits = new Map<string, AimdLimits>();
  private readonly freezeCmd: LuaCommand;
  private readonly rateLimitedCmd: LuaCommand;
  private readonly outcomeCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    options: FleetVenueControlOptions = {},
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.clock = options.clock ?? systemClock;
    this.defaults = options.defaults ?? DEFAULT_AIMD_LIMITS;
    this.freezeCmd = luaCommand(redis, COMMANDS, 'freezeVenue-1.lua');
    this.rateLimitedCmd = luaCommand(redis, COMMANDS, 'rateLimitedVenue-2.lua');
    this.outcomeCmd = luaCommand(redis, COMMANDS, 'reportOutcome-2.lua');
  }

  /** Sets the AIMD limits of a venue (from its connector: `aimdLimitsFor(connector)`). */
  configure(venue: string, limits: AimdLimits): void {
    this.limits.set(venue, limits);
  }

  limitsOf(venue: string): AimdLimits {
    return this.limits.get(venue) ?? this.defaults;
  }

  /** Freezes `venue` until `untilMs`; never shortens a freeze already in place. Returns the freeze in force. */
  async freeze(venue: string, untilMs: number, cause: FreezeCause): Promise<VenueFreeze> {
    const [fu, fc] = (await this.freezeCmd([this.key(venue, 'control')], [Math.ceil(untilMs), cause])) as [number, string, number];
    return { untilMs: Number(fu), cause: fc as FreezeCause };
  }

  /** The end of the venue's freeze, or null when it is not frozen now. */
  async frozenUntil(venue: string): Promise<number | null> {
    return (await this.freezeOf(venue))?.untilMs ?? null;
  }

  async freezeOf(venue: string): Promise<VenueFreeze | null> {
    const [fu, fc] = await this.redis.hmget(this.key(venue, 'control'), 'fu', 'fc');
    const untilMs = Number(fu ?? 0);
    return untilMs > this.clock.now() ? { untilMs, cause: (fc ?? 'manual') as FreezeCause } : null;
  }

  /**
   * The venue answered 429/418: halves its concurrency (floor `min`, once per
   * `halveCooldownMs` however many workers report the same incident) and, when `freezeUntilMs` is
   * given, freezes it.
   */
  async onRateLimited(venue: string, freezeUntilMs = 0, cause: FreezeCause = '429'): Promise<ControlStep & { frozenUntilMs: number }> {
    const l = this.limitsOf(venue);
    const [c, halved, fu] = (await this.rateLimitedCmd(
      [this.key(venue, 'control'), this.key(venue, 'latency')],
      [this.clock.now(), l.min, l.max, l.halveCooldownMs, Math.ceil(freezeUntilMs), cause],
    )) as [number, number, number];
    return { concurrency: Number(c), change: halved === 1 ? 'halve' : 'none', frozenUntilMs: Number(fu) };
  }

  /** Feeds one outcome into the venue's fleet-wide window; may add or subtract one. */
  async reportOutcome(venue: string, outcome: AimdOutcome): Promise<ControlStep> {
    const l = this.limitsOf(venue);
    const [c, change] = (await this.outcomeCmd(
      [this.key(venue, 'control'), this.key(venue, 'latency')],
      [
        this.clock.now(),
        outcome.ok ? 1 : 0,
        Math.max(0, Math.round(outcome.latencyMs)),
        l.min,
        l.max,
        l.increaseAfterMs,
        l.maxFailureRatio,
        l.maxP95LatencyMs,
        l.minSamples,
        l.sampleSize,
      ],
    )) as [number, number];
    return { concurrency: Number(c), change: change === 1 ? 'increase' : change === -1 ? 'decrease' : 'none' };
  }

  /** The venue's current fleet-wide concurrency (its ceiling until AIMD has acted). */
  async concurrency(venue: string): Promise<number> {
    const l = this.limitsOf(venue);
    const raw = await this.redis.hget(this.key(venue, 'control'), 'c');
    return Math.min(l.max, Math.max(l.min, raw === null ? l.max : Number(raw)));
  }

  /** Everything about a venue's control, for metrics and `tickfleet status`. */
  async snapshot(venue: string): Promise<VenueControlSnapshot> {
    const l = this.limitsOf(venue);
    const [c, n, f] = await this.redis.hmget(this.key(venue, 'control'), 'c', 'n', 'f');
    return {
      venue,
      concurrency: Math.min(l.max, Math.max(l.min, c === null ? l.max : Number(c))),
      min: l.min,
      max: l.max,
      frozen: await this.freezeOf(venue),
      windowOutcomes: Number(n ?? 0),
      windowFailures: Number(f ?? 0),
    };
  }

  /** Forgets a venue's state (operator reset): concurrency back to its ceiling, no freeze. */
  async reset(venue: string): Promise<void> {
    await this.redis.del(this.key(venue, 'control'), this.key(venue, 'latency'));
  }

  private key(venue: string, suffix: string): string {
    return venueKey(this.prefix, venue, suffix);
  }
}
