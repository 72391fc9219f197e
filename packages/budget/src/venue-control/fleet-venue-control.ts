import { type BookCooldownSettings, systemClock, type Clock, type Connector, type ConnectorStatus, ValidationError } from '@tickfleet/core';
import { QUEUE_PREFIX, queueKey, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { budgetCommand } from '../internal/commands.js';
import { DEFAULT_AIMD_LIMITS, startConcurrency, type AimdLimits } from './aimd-settings.js';
import { BOOK_BACKOFF_DEFAULTS } from './book-backoff.js';
import { FleetTimeline, type FleetTimelineOptions } from './fleet-timeline.js';
import { VenueCooldown } from './venue-cooldown.js';
import {
  type FailureCause,
  parseOutcomeRecord,
  sanitizeErrorMessage,
  VENUE_HEALTH_DEFAULTS,
  venueHealth,
  type VenueHealth,
  type VenueHealthSettings,
} from './venue-health.js';

/** The pub/sub channel on which changes of a venue's freeze or fallback mark are announced (message: the venue). */
export function venueMarksChannel(prefix: string): string {
  return `${prefix}:venue-marks`;
}

/** Most outcomes, and most request latencies, one report carries (they travel as script arguments). */
export const MAX_OUTCOME_BATCH = 500;

/** Every cause a freeze record can carry (bounded: metrics export one series per cause). */
export const FREEZE_CAUSES = ['429', '418', 'budget', 'manual'] as const;
export type FreezeCause = (typeof FREEZE_CAUSES)[number];

/** What one AIMD step did to the concurrency. */
export type AimdChange = 'increase' | 'decrease' | 'halve' | 'none';

/** One finished unit, as AIMD sees it. */
export interface AimdOutcome {
  ok: boolean;
  /**
   * The latency of the unit's one request, for a caller whose units are single requests; a unit
   * of several requests leaves it out and its requests' latencies go in the report's own list
   * (AIMD's p95 is over requests, never over whole units).
   */
  latencyMs?: number;
  /** Records a successful unit stored (added to the venue's fleet-wide total). @defaultValue 0 */
  records?: number;
  /** Why a failed unit failed (counted by cause in the venue's health window). @defaultValue 'other' */
  cause?: FailureCause;
  /** A failed unit's error message; kept sanitized ({@link sanitizeErrorMessage}) as the venue's last error. */
  message?: string;
}

/** Per-instrument backoff of a failed book snapshot. */
export interface BookBackoffOptions {
  /** Delay scale of the first failure. @defaultValue BOOK_BACKOFF_DEFAULTS.baseMs */
  baseMs?: number;
  /** Upper bound of any delay. @defaultValue BOOK_BACKOFF_DEFAULTS.maxMs */
  maxMs?: number;
}

/**
 * BullMQ holds a queue's units while its limiter key lives only when the queue has a global rate
 * limit; this one is so high it never limits by count. The limiter value is at least any max.
 */
const LIMITER_FULL = Number.MAX_SAFE_INTEGER;
const UNLIMITED_RATE_MAX = 1_000_000_000_000;
const UNLIMITED_RATE_DURATION_MS = 1000;

export interface FleetVenueControlOptions {
  /** Key prefix (tests pass a fresh one). @defaultValue QUEUE_PREFIX */
  prefix?: string;
  /** This process's clock: the clock of the times the methods take and return. @defaultValue systemClock */
  clock?: Clock;
  /** The fleet's clock, which every time kept in Redis is on ({@link FleetTimeline}). @defaultValue see FleetTimelineOptions.serverClock */
  serverClock?: FleetTimelineOptions['serverClock'];
  /** Limits of venues not given to {@link FleetVenueControl.configure}. @defaultValue DEFAULT_AIMD_LIMITS */
  defaults?: AimdLimits;
  /** The health window a reporting worker keeps, and the thresholds of the health it judges. @defaultValue VENUE_HEALTH_DEFAULTS */
  health?: Partial<VenueHealthSettings>;
}

/** Shortest freeze after a 429 whatever the connector says (its `freezeMs` may be 0). */
const MIN_FREEZE_MS = 1000;

/**
 * How a venue's freeze grows when it keeps answering 429 (a connector's `freezeMs`, `freezeMaxMs`
 * and `freezeResetMs`; see {@link freezeEscalationFor}).
 */
export interface FreezeEscalation {
  /** Freeze after a 429 without a time from the venue, and the first step of the escalation. */
  baseMs: number;
  /** Longest escalated freeze. */
  maxMs: number;
  /** No 429 for this long after a freeze ended and the escalation starts over. */
  cleanMs: number;
}

/** The freeze escalation of a connector; `freezeResetMs` defaults to `freezeMs`. */
export function freezeEscalationFor(connector: Pick<Connector, 'freezeMs' | 'freezeMaxMs' | 'freezeResetMs'>): FreezeEscalation {
  // A connector with freezeMs 0 still freezes on a 429: at least MIN_FREEZE_MS, doubling from there.
  const baseMs = Math.max(MIN_FREEZE_MS, connector.freezeMs);
  return { baseMs, maxMs: Math.max(baseMs, connector.freezeMaxMs), cleanMs: connector.freezeResetMs ?? baseMs };
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
  /** Unit outcomes and failures in the current AIMD window. */
  windowOutcomes: number;
  windowFailures: number;
  /** Request latencies in the current AIMD window (its p95 is over the last `sampleSize` of them). */
  windowRequests: number;
  /** Fleet-wide totals that only grow: units that succeeded and the records they stored (reported in batches, within ~250 ms). */
  unitsOk: number;
  records: number;
}

export interface ControlStep {
  concurrency: number;
  change: AimdChange;
}

/**
 * The one venue-control API of the fleet: each venue's freeze (and its escalation), its AIMD
 * concurrency, the backoff of its book instruments and its order-book cooldown, in Redis under the
 * venue's hash tag (one Cluster slot); what a connector's status lets a venue do is
 * `venue-status.ts` ({@link venueHold}), which reads the freeze and cooldown these methods return. Every
 * change is one Lua script, so any number of workers can report 429s and outcomes at once and the
 * venue sees one controller, not N fighting ones. These rules run only here (in the scripts):
 * - a rate limit (429/418) halves the concurrency (floor `min`), once per `halveCooldownMs`;
 * - once `minSamples` outcomes are in the window, a failure ratio above `maxFailureRatio` or a
 *   nearest-rank p95 latency above `maxP95LatencyMs` subtracts one (floor `min`) and starts a new window;
 * - once `increaseAfterMs` have passed since the window began and it holds `minSamples`
 *   outcomes, while not frozen, it adds one (ceiling `max`) only if there was no 429 for
 *   `stableMs`, the failure ratio is under half of `maxFailureRatio` and the p95 under
 *   `lowP95LatencyMs` (hysteresis), and starts a new window, so the fleet adds at most one per
 *   `increaseAfterMs`; until the window holds `minSamples` it stays open (a slow venue is
 *   judged over a longer window, never over a few outcomes);
 * - a venue without a value (new, reset, or its fleet restarted: `WorkerHeartbeat.beat`)
 *   runs at its start value: the floor for venues with opaque limits, else the ceiling.
 *
 * A freeze has one record, the control hash's `fu`/`fc` fields. {@link freeze} and
 * {@link onRateLimited} (which also decides the escalation, so it must write in the same step)
 * write it by one rule (only ever extended) and, in the same script, derive the venue queue's
 * BullMQ limiter key from it (so workers stop taking the venue's units); everything that asks whether a venue is frozen (the
 * budget gate, the worker heartbeat, the status page) reads the record. The caller applies a
 * changed concurrency (a returned {@link ControlStep}) to the venue's queue.
 *
 * Every time kept in Redis (freeze ends, windows, the cooldown's end) is on the fleet's timeline,
 * the Redis server's clock ({@link FleetTimeline}); the methods take and return times on this
 * instance's clock, moved by the measured offset, so a worker whose clock is off by seconds or
 * minutes starts and ends every fleet-wide pause when the others do.
 */
export class FleetVenueControl {
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly defaults: AimdLimits;
  private readonly healthSettings: VenueHealthSettings;
  private readonly limits = new Map<string, AimdLimits>();
  private readonly freezeCmd: LuaCommand;
  private readonly rateLimitedCmd: LuaCommand;
  private readonly outcomeCmd: LuaCommand;
  private readonly cooldown: VenueCooldown;
  /** The fleet's timeline: every time kept in Redis is on it; the methods take and return times on `clock`. */
  readonly timeline: FleetTimeline;

  constructor(
    private readonly redis: RedisClient,
    options: FleetVenueControlOptions = {},
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.clock = options.clock ?? systemClock;
    this.defaults = options.defaults ?? DEFAULT_AIMD_LIMITS;
    this.healthSettings = { ...VENUE_HEALTH_DEFAULTS, ...options.health };
    this.freezeCmd = budgetCommand(redis, 'freezeVenue-3.lua');
    this.rateLimitedCmd = budgetCommand(redis, 'rateLimitedVenue-4.lua');
    this.outcomeCmd = budgetCommand(redis, 'reportOutcome-3.lua');
    this.timeline = new FleetTimeline(redis, { clock: this.clock, ...(options.serverClock === undefined ? {} : { serverClock: options.serverClock }) });
    this.cooldown = new VenueCooldown(redis, this.prefix, this.clock, this.timeline);
  }

  /** Sets the AIMD limits of a venue (from its connector: `aimdLimitsFor(connector)`). */
  configure(venue: string, limits: AimdLimits): void {
    this.limits.set(venue, limits);
  }

  limitsOf(venue: string): AimdLimits {
    return this.limits.get(venue) ?? this.defaults;
  }

  /**
   * Freezes `venue` until `untilMs` (on this instance's clock, kept on the fleet's timeline); never
   * shortens a freeze already in place. Writes the freeze record and, in the same step, the queue
   * limiter derived from it. Returns the freeze in force, or null when there is none (an `untilMs` already past).
   */
  async freeze(venue: string, untilMs: number, cause: FreezeCause): Promise<VenueFreeze | null> {
    const now = await this.timeline.now();
    const [fu, fc] = (await this.freezeCmd(
      [this.key(venue, 'control'), queueKey(this.prefix, venue, 'limiter'), queueKey(this.prefix, venue, 'meta')],
      [now, Math.ceil(this.timeline.toFleet(untilMs)), cause, LIMITER_FULL, UNLIMITED_RATE_MAX, UNLIMITED_RATE_DURATION_MS],
    )) as [number, string, number];
    await this.announce(venue);
    return Number(fu) > 0 ? { untilMs: this.timeline.toLocal(Number(fu)), cause: fc as FreezeCause } : null;
  }

  /**
   * Tells every worker's {@link FreezeWatch} that the venue's marks changed (they read it again).
   * Part of every freeze write: a worker that does not hear it still re-reads within its refresh.
   */
  private async announce(venue: string): Promise<void> {
    await this.redis.publish(venueMarksChannel(this.prefix), venue);
  }

  /** The end of the venue's freeze (on this instance's clock), or null when it is not frozen now. */
  async frozenUntil(venue: string): Promise<number | null> {
    return (await this.freezeOf(venue))?.untilMs ?? null;
  }

  /** Remaining freeze of the venue in ms (0 when it is not frozen): the budget gate's check. */
  async frozenForMs(venue: string): Promise<number> {
    const untilMs = await this.frozenUntil(venue);
    return untilMs === null ? 0 : untilMs - this.clock.now();
  }

  /** The freeze in force (the record, its end on this instance's clock), or null. */
  async freezeOf(venue: string): Promise<VenueFreeze | null> {
    const [now, [fu, fc]] = await Promise.all([this.timeline.now(), this.redis.hmget(this.key(venue, 'control'), 'fu', 'fc')]);
    const untilMs = Number(fu ?? 0);
    return untilMs > now ? { untilMs: this.timeline.toLocal(untilMs), cause: (fc ?? 'manual') as FreezeCause } : null;
  }

  /**
   * The venue answered 429/418: halves its concurrency (floor `min`, once per `halveCooldownMs`
   * however many workers report the same incident) and freezes it, all in one script.
   * - With `escalation` (the worker passes its connector's, {@link freezeEscalationFor}): the
   *   freeze lasts `baseMs`, doubled for each incident that follows the previous freeze within
   *   `cleanMs` after it ended, up to `maxMs`; a 429 while the freeze is in force is the same
   *   incident and escalates nothing. `venueUntilMs` (the venue's Retry-After or ban end, 0 when
   *   it gave none) is the freeze of a first incident and a minimum of every escalated one.
   * - Without it: freezes until `venueUntilMs` when given ({@link freeze}), nothing else.
   * `frozenUntilMs` is the freeze in force afterwards (0 when none); `level` the escalation
   * level of the incident (0 first, 1 doubled, ...; -1 without escalation).
   */
  async onRateLimited(
    venue: string,
    venueUntilMs = 0,
    cause: FreezeCause = '429',
    escalation?: FreezeEscalation,
  ): Promise<ControlStep & { frozenUntilMs: number; level: number }> {
    const l = this.limitsOf(venue);
    const now = await this.timeline.now();
    const [c, halved, fu, level] = (await this.rateLimitedCmd(
      [this.key(venue, 'control'), this.key(venue, 'latency'), queueKey(this.prefix, venue, 'limiter'), queueKey(this.prefix, venue, 'meta')],
      [
        now,
        l.min,
        l.max,
        l.halveCooldownMs,
        venueUntilMs > 0 ? Math.max(0, Math.ceil(this.timeline.toFleet(venueUntilMs))) : 0,
        escalation?.baseMs ?? 0,
        escalation?.maxMs ?? 0,
        escalation?.cleanMs ?? 0,
        cause,
        LIMITER_FULL,
        UNLIMITED_RATE_MAX,
        UNLIMITED_RATE_DURATION_MS,
        startConcurrency(l),
      ],
    )) as [number, number, number, number];
    await this.announce(venue);
    const frozenUntilMs = Number(fu) > 0 ? this.timeline.toLocal(Number(fu)) : 0;
    return { concurrency: Number(c), change: halved === 1 ? 'halve' : 'none', frozenUntilMs, level: Number(level) };
  }

  /** Records one outcome and applies AIMD ({@link reportOutcomes} with a batch of one). */
  async reportOutcome(venue: string, outcome: AimdOutcome): Promise<ControlStep> {
    return this.reportOutcomes(venue, [outcome]);
  }

  /**
   * Records a batch (a worker's units and requests since its last report; see `OutcomeReporter`)
   * and applies AIMD once over the window they leave: the failure ratio over units, the p95 over
   * request latencies (`requestLatenciesMs`, plus the `latencyMs` of outcomes that carry one). In
   * the same script, adds the outcomes to the venue's health record. At most
   * {@link MAX_OUTCOME_BATCH} outcomes and as many latencies per call, at least one of either.
   */
  async reportOutcomes(venue: string, outcomes: readonly AimdOutcome[], requestLatenciesMs: readonly number[] = []): Promise<ControlStep> {
    const latencies = [...requestLatenciesMs, ...outcomes.flatMap((o) => (o.latencyMs === undefined ? [] : [o.latencyMs]))].map((ms) =>
      Math.max(0, Math.round(ms)),
    );
    if (outcomes.length > MAX_OUTCOME_BATCH || latencies.length > MAX_OUTCOME_BATCH || outcomes.length + latencies.length === 0)
      throw new ValidationError('outcomes', `1 to ${MAX_OUTCOME_BATCH} outcomes or request latencies`, `${outcomes.length} and ${latencies.length}`);
    const l = this.limitsOf(venue);
    const failures = outcomes.reduce((n, o) => n + (o.ok ? 0 : 1), 0);
    const records = outcomes.reduce((n, o) => n + (o.ok ? Math.max(0, Math.floor(o.records ?? 0)) : 0), 0);
    const now = await this.timeline.now();
    const [c, change] = (await this.outcomeCmd(
      [this.key(venue, 'control'), this.key(venue, 'latency'), this.key(venue, 'health')],
      [
        now,
        failures,
        l.min,
        l.max,
        l.increaseAfterMs,
        l.maxFailureRatio,
        l.maxP95LatencyMs,
        l.minSamples,
        l.sampleSize,
        records,
        l.lowP95LatencyMs,
        l.stableMs,
        startConcurrency(l),
        outcomes.length === 0 ? '' : JSON.stringify(this.healthReport(outcomes, now)),
        outcomes.length,
        ...latencies,
      ],
    )) as [number, number];
    return { concurrency: Number(c), change: change === 1 ? 'increase' : change === -1 ? 'decrease' : 'none' };
  }

  /** A batch of at least one outcome as the health record takes it (see reportOutcome-3.lua's ARGV[14]). */
  private healthReport(outcomes: readonly AimdOutcome[], now: number): Record<string, unknown> {
    const last = outcomes[outcomes.length - 1]!;
    let run = 0;
    while (run < outcomes.length && outcomes[outcomes.length - 1 - run]!.ok === last.ok) run++;
    const causes: Partial<Record<FailureCause, number>> = {};
    let lastFailure: AimdOutcome | undefined;
    for (const o of outcomes) {
      if (o.ok) continue;
      causes[o.cause ?? 'other'] = (causes[o.cause ?? 'other'] ?? 0) + 1;
      lastFailure = o;
    }
    return {
      bms: this.healthSettings.bucketMs,
      nb: this.healthSettings.buckets,
      ttl: this.healthSettings.recordTtlMs,
      causes,
      tail: last.ok ? 'o' : 'f',
      run,
      uniform: run === outcomes.length,
      ...(outcomes.some((o) => o.ok) ? { okAt: now } : {}),
      ...(lastFailure
        ? { err: { t: now, c: lastFailure.cause ?? 'other', m: sanitizeErrorMessage(lastFailure.message ?? '', this.healthSettings.messageMaxChars) } }
        : {}),
    };
  }

  /** The venue's current fleet-wide concurrency (its start value until AIMD has acted). */
  async concurrency(venue: string): Promise<number> {
    const l = this.limitsOf(venue);
    const raw = await this.redis.hget(this.key(venue, 'control'), 'c');
    return Math.min(l.max, Math.max(l.min, raw === null ? startConcurrency(l) : Number(raw)));
  }

  /** Everything about a venue's control, for metrics and `tickfleet status`. */
  async snapshot(venue: string): Promise<VenueControlSnapshot> {
    const l = this.limitsOf(venue);
    const [c, n, f, m, tu, tr] = await this.redis.hmget(this.key(venue, 'control'), 'c', 'n', 'f', 'm', 'tu', 'tr');
    return {
      venue,
      concurrency: Math.min(l.max, Math.max(l.min, c === null ? startConcurrency(l) : Number(c))),
      min: l.min,
      max: l.max,
      frozen: await this.freezeOf(venue),
      windowOutcomes: Number(n ?? 0),
      windowFailures: Number(f ?? 0),
      windowRequests: Number(m ?? 0),
      unitsOk: Number(tu ?? 0),
      records: Number(tr ?? 0),
    };
  }

  /**
   * The venue's health: its fleet-wide outcome record judged with the connector's `status` (null:
   * no connector), its freeze and its order-book cooldown by {@link venueHealth}. Three reads of
   * the venue's keys (one hash slot), sent together: cheap enough for `/healthz` and `status`.
   * Its times are on the fleet's timeline (as the record keeps them).
   */
  async health(venue: string, status: ConnectorStatus | null): Promise<VenueHealth> {
    const [fields, [fu, fc, l4], cooldownUntilMs, now] = await Promise.all([
      this.redis.hgetall(this.key(venue, 'health')),
      this.redis.hmget(this.key(venue, 'control'), 'fu', 'fc', 'l4'),
      this.cooldown.fleetUntilMs(venue),
      this.timeline.now(),
    ]);
    const untilMs = Number(fu ?? 0);
    return venueHealth(
      parseOutcomeRecord(fields, l4 === null ? null : Number(l4), now),
      { status, freeze: untilMs > now ? { untilMs, cause: fc ?? 'manual' } : null, bookCooldownUntilMs: cooldownUntilMs, nowMs: now },
      this.healthSettings,
    );
  }

  /** The venue's fleet-wide totals (units that succeeded, records they stored): counters that only grow. */
  async totals(venue: string): Promise<{ unitsOk: number; records: number }> {
    const [tu, tr] = await this.redis.hmget(this.key(venue, 'control'), 'tu', 'tr');
    return { unitsOk: Number(tu ?? 0), records: Number(tr ?? 0) };
  }

  /**
   * A book snapshot of `jobId` failed: how long that instrument waits before its next one. The
   * failure streak is counted per instrument in Redis (fleet-wide); the delay is `baseMs` doubled
   * per failure in a row, up to `maxMs`: a pure function of the streak, with no random part, so
   * one instrument's retries are reproducible. The worker spreads instruments that failed together
   * with a share drawn from a hash of the job id on top (`jitteredBackoffMs`).
   */
  async bookBackoffMs(venue: string, jobId: string, options: BookBackoffOptions = {}): Promise<number> {
    const streak = await this.redis.hincrby(this.key(venue, 'book-backoff'), jobId, 1);
    const base = options.baseMs ?? BOOK_BACKOFF_DEFAULTS.baseMs;
    const max = options.maxMs ?? BOOK_BACKOFF_DEFAULTS.maxMs;
    return Math.min(max, base * 2 ** Math.min(20, streak - 1));
  }

  /** A book snapshot of `jobId` succeeded: its failure streak starts over. */
  async resetBookBackoff(venue: string, jobId: string): Promise<void> {
    await this.redis.hdel(this.key(venue, 'book-backoff'), jobId);
  }

  /**
   * Counts one finished book poll of the venue toward its order-book cooldown (`failed`: the venue
   * failed it; 429s are the freeze's business and are not counted). When most polls of one window
   * failed, the venue's book polling stops fleet-wide for `settings.cooldownMs`. Returns the
   * cooldown end (0: none) and whether this poll started it.
   */
  reportBookPoll(venue: string, failed: boolean, settings: BookCooldownSettings): Promise<{ untilMs: number; started: boolean }> {
    return this.cooldown.report(venue, failed, settings);
  }

  /** Remaining order-book cooldown of the venue in ms (0: none); read from Redis at most every 500 ms per venue. */
  bookCooldownMs(venue: string): Promise<number> {
    return this.cooldown.remainingMs(venue);
  }

  /** The order-book cooldown as this process last saw it, without I/O (for telemetry). */
  knownBookCooldownMs(venue: string): number {
    return this.cooldown.knownRemainingMs(venue);
  }

  /** Forgets a venue's state (operator reset): concurrency back to its start value, no freeze (record and queue limiter). */
  async reset(venue: string): Promise<void> {
    await this.redis.del(this.key(venue, 'control'), this.key(venue, 'latency'), queueKey(this.prefix, venue, 'limiter'));
  }

  private key(venue: string, suffix: string): string {
    return venueKey(this.prefix, venue, suffix);
  }
}
