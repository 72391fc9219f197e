import { z } from 'zod';
import { VenueName } from './names.js';

export const CONNECTOR_STATUSES = ['active', 'paused', 'disabled'] as const;
export const ConnectorStatus = z.enum(CONNECTOR_STATUSES);
export type ConnectorStatus = z.infer<typeof ConnectorStatus>;

export const RATE_LIMIT_POLICIES = ['fixed-window', 'gcra', 'sliding-window'] as const;
export const RateLimitPolicyName = z.enum(RATE_LIMIT_POLICIES);
export type RateLimitPolicyName = z.infer<typeof RateLimitPolicyName>;

/**
 * How a venue counts requests.
 * - `fixed-window`: at most `limit * headroom` weight per clock-aligned window of `periodMs`
 *   (`windowStart = floor(now / periodMs) * periodMs`), as Binance counts per clock minute.
 * - `gcra`: a leaky bucket of capacity `limit * headroom` that drains fully every `periodMs`
 *   (Kraken- and Coinbase-style sliding limits); exact retry-after, smooth spacing.
 * - `sliding-window`: at most `limit * headroom` weight in any window of `periodMs`, wherever it
 *   starts (Polymarket's Cloudflare limits slide), counted in 20 slots per period.
 */
export const RateLimit = z.object({
  policy: RateLimitPolicyName.default('fixed-window'),
  /** Weight the venue publishes per period. */
  limit: z.number().int().positive(),
  periodMs: z.number().int().positive(),
  /** Fraction of `limit` tickfleet spends, absorbing clock and window differences. @defaultValue 0.95 */
  headroom: z.number().gt(0).max(1).default(0.95),
});
export type RateLimit = z.infer<typeof RateLimit>;

export const AIMD_START_MODES = ['floor', 'ceiling'] as const;

/**
 * How long a worker counts as live after its last beat for a venue (`WorkerHeartbeat`). Workers
 * beat on every connector refresh (`TICKFLEET_CONNECTOR_POLL_MS`, 5 s by default), so this is
 * three beats. It is also the shortest AIMD `restartAfterMs` other than 0 (never): "no live worker
 * for `restartAfterMs`" cannot be known sooner, and a shorter period would read the gap between
 * two beats of a live fleet as a restart and set its learnt concurrency back on every beat.
 */
export const WORKER_LIVENESS_MS = 15_000;

/**
 * Defaults of a venue's AIMD concurrency, each written once: the connector's `aimd` settings take
 * theirs from here, and so do the limits the venue control resolves (`aimdLimitsFor` and
 * `DEFAULT_AIMD_LIMITS` of @tickfleet/budget).
 */
export const AIMD_DEFAULTS = Object.freeze({
  /** Floor of a venue that starts at its ceiling. */
  min: 1,
  /** Floor of a venue that starts from it (see {@link defaultAimdMin}). */
  floorStartMin: 2,
  increaseAfterMs: 30_000,
  stableMs: 30_000,
  maxFailureRatio: 0.2,
  maxP95LatencyMs: 10_000,
  /** The low p95 threshold, or `maxP95LatencyMs` when that is lower. */
  lowP95LatencyMs: 2000,
  restartAfterMs: 60_000,
  /** Outcomes a window needs before its failure ratio or p95 can change the value. */
  minSamples: 20,
  /** Latencies kept for the p95. */
  sampleSize: 200,
  /** After a halving, further 429s within this long (requests already in flight) only extend the freeze. */
  halveCooldownMs: 1000,
  /** How long a worker holds successes before it reports them to the fleet's AIMD in one batch. */
  reportIntervalMs: 250,
});

/**
 * Additive-increase / multiplicative-decrease of a venue's fleet-wide concurrency (the order-book
 * design's control loop; docs/architecture.md, "Budgets and venue control"). A 429 halves it; it grows by one only after a
 * stable period with a low failure ratio and a low p95; it shrinks by one when the failure ratio or
 * the p95 passes its high threshold. Low and high thresholds differ, so the value settles.
 */
export const AimdSettings = z
  .object({
    /** Floor. @defaultValue per venue: {@link defaultAimdMin} */
    min: z.number().int().positive().optional(),
    /** Ceiling; defaults to the connector's `maxInflight`. */
    max: z.number().int().positive().optional(),
    /** Minimum interval between two adjustments (the observation window). @defaultValue AIMD_DEFAULTS.increaseAfterMs */
    increaseAfterMs: z.number().int().positive().default(AIMD_DEFAULTS.increaseAfterMs),
    /** No 429 for this long before an increase. @defaultValue AIMD_DEFAULTS.stableMs */
    stableMs: z.number().int().nonnegative().default(AIMD_DEFAULTS.stableMs),
    /** Failure ratio above which one is subtracted; an increase needs less than half of it. @defaultValue AIMD_DEFAULTS.maxFailureRatio */
    maxFailureRatio: z.number().min(0).max(1).default(AIMD_DEFAULTS.maxFailureRatio),
    /** p95 latency above which one is subtracted (the high threshold). @defaultValue AIMD_DEFAULTS.maxP95LatencyMs */
    maxP95LatencyMs: z.number().int().positive().default(AIMD_DEFAULTS.maxP95LatencyMs),
    /** p95 latency an increase needs to be under (the low threshold). @defaultValue AIMD_DEFAULTS.lowP95LatencyMs, or `maxP95LatencyMs` when that is lower */
    lowP95LatencyMs: z.number().int().positive().optional(),
    /**
     * Where a new fleet starts, and a restarted one (no live worker for `restartAfterMs`) starts
     * again: `floor` (min, then re-learn: venues whose limits are opaque) or `ceiling` (max: venues
     * whose documented limits the budget already enforces). @defaultValue per venue: {@link defaultAimdStart}
     */
    start: z.enum(AIMD_START_MODES).optional(),
    /**
     * No live worker for this long is a fleet restart: the concurrency goes back to its start. 0
     * never; otherwise at least {@link WORKER_LIVENESS_MS}. @defaultValue AIMD_DEFAULTS.restartAfterMs
     */
    restartAfterMs: z.number().int().nonnegative().default(AIMD_DEFAULTS.restartAfterMs),
  })
  .refine((a) => a.lowP95LatencyMs === undefined || a.lowP95LatencyMs <= a.maxP95LatencyMs, {
    message: 'a low p95 threshold at most the high one (lowP95LatencyMs <= maxP95LatencyMs)',
    path: ['lowP95LatencyMs'],
  })
  .refine((a) => a.restartAfterMs === 0 || a.restartAfterMs >= WORKER_LIVENESS_MS, {
    message: `0 (never) or at least ${WORKER_LIVENESS_MS} ms, the workers' liveness window`,
    path: ['restartAfterMs'],
  });
export type AimdSettings = z.infer<typeof AimdSettings>;

/**
 * Venues whose limits are opaque (IP-based, varying: the order-book design's Polymarket and
 * Limitless) start from the floor and learn; the others start at the ceiling, their documented
 * limits being enforced by the fleet budget before any request.
 */
const AIMD_FLOOR_START_VENUES: ReadonlySet<string> = new Set(['polymarket', 'limitless']);

/** Where a venue's AIMD concurrency starts when its connector does not say. */
export function defaultAimdStart(venue: string): (typeof AIMD_START_MODES)[number] {
  return AIMD_FLOOR_START_VENUES.has(venue) ? 'floor' : 'ceiling';
}

/**
 * A venue's AIMD floor when its connector does not say: 2 for the order-book venues that start
 * from it (a discovery listing holds one slot while it runs, and book polling must never wait on
 * discovery), else 1.
 */
export function defaultAimdMin(venue: string): number {
  return AIMD_FLOOR_START_VENUES.has(venue) ? AIMD_DEFAULTS.floorStartMin : AIMD_DEFAULTS.min;
}

/** Defaults of the order-book cooldown, each written once (the schema below and the CLI take them from here). */
export const DEFAULT_BOOK_COOLDOWN = Object.freeze({
  failureRatio: 0.5,
  minPolls: 5,
  /** The scheduler's default book period. */
  windowMs: 5000,
  cooldownMs: 30_000,
});

/**
 * Per-venue order-book cooldown: when at least `failureRatio` of the book polls in one window of
 * `windowMs` (one polling interval) failed, and at least `minPolls` were made, the venue's book
 * polls pause fleet-wide for `cooldownMs`. Distinct from the per-instrument backoff (one broken
 * market) and from the 429 freeze (the venue refusing us): this is the venue failing broadly.
 */
export const BookCooldownSettings = z.object({
  /** @defaultValue DEFAULT_BOOK_COOLDOWN.failureRatio */
  failureRatio: z.number().gt(0).max(1).default(DEFAULT_BOOK_COOLDOWN.failureRatio),
  /** @defaultValue DEFAULT_BOOK_COOLDOWN.minPolls */
  minPolls: z.number().int().positive().default(DEFAULT_BOOK_COOLDOWN.minPolls),
  /** @defaultValue DEFAULT_BOOK_COOLDOWN.windowMs */
  windowMs: z.number().int().positive().default(DEFAULT_BOOK_COOLDOWN.windowMs),
  /** @defaultValue DEFAULT_BOOK_COOLDOWN.cooldownMs */
  cooldownMs: z.number().int().positive().default(DEFAULT_BOOK_COOLDOWN.cooldownMs),
});
export type BookCooldownSettings = z.infer<typeof BookCooldownSettings>;

/** Defaults of a connector's book poll loop ({@link BookLoopSettings}). */
export const BOOK_LOOP_DEFAULTS = Object.freeze({
  /** Every active instrument once per this period (the order-book design's 1 Hz class). */
  cadenceMs: 1000,
  /** Leased shares the venue's instruments are split into (by a hash of the symbol); workers hold whole shares. */
  shares: 8,
});

/**
 * A venue's order books polled by a leased loop instead of one queued unit per poll: workers hold
 * shares of the active set under leases and poll them in batches every `cadenceMs`
 * (docs/order-books.md). Absent: one `book-poll` unit per instrument and poll.
 */
export const BookLoopSettings = z.object({
  /** @defaultValue BOOK_LOOP_DEFAULTS.cadenceMs */
  cadenceMs: z.number().int().min(100).max(3_600_000).default(BOOK_LOOP_DEFAULTS.cadenceMs),
  /** @defaultValue BOOK_LOOP_DEFAULTS.shares */
  shares: z.number().int().min(1).max(256).default(BOOK_LOOP_DEFAULTS.shares),
  /**
   * Levels per side the loop asks for, where the venue's adapter takes a depth (Binance, CCXT);
   * Binance at 1 polls top of book for many symbols per `ticker/bookTicker` request. Absent: the adapter's default.
   */
  depth: z.number().int().min(1).max(5000).optional(),
});
export type BookLoopSettings = z.infer<typeof BookLoopSettings>;

/** Redis key of a venue's book loop: `backoff` (instrument -> until, fleet-wide, so a moved share keeps it), `live` (worker -> its last {@link BookLoopReport}) and `last` (instrument -> its last-stored marker, for a share's next holder). */
export function bookLoopKey(prefix: string, venue: string, what: 'backoff' | 'live' | 'last'): string {
  return `${prefix}:venue:{${venue}}:book-loop:${what}`;
}

/** What one worker's book loop of a venue did in one poll-statistics interval, `[atMs - intervalMs, atMs)`, and its snapshot ages at `atMs`. */
export interface BookLoopReport {
  workerId: string;
  atMs: number;
  intervalMs: number;
  cadenceMs: number;
  shares: number[];
  /** Active instruments in those shares. */
  instruments: number;
  /** Books stored (changed). */
  books: number;
  /** Books that came back unchanged (counted, not stored). */
  unchanged: number;
  requests: number;
  /** Budget weight the requests spent. */
  weight: number;
  cycles: number;
  /** Passes begun late because the previous one ran over its cadence (or the process stalled). */
  overruns: number;
  /** Age of each instrument's newest snapshot at `atMs`: p50 and p95 (null before the first). */
  p50AgeMs: number | null;
  p95AgeMs: number | null;
}

/**
 * How requests of a venue budgeted per scope (Xetra: one budget per market) are spread over the
 * period, fleet-wide: `even` spaces them `periodMs / limit` apart (no bursts, the proactive-limiter
 * design's default), `burst` lets up to the limit go back to back, then none until the oldest of
 * them is a whole period old (a strict sliding window).
 */
export const PACINGS = ['even', 'burst'] as const;
export const Pacing = z.enum(PACINGS);
export type Pacing = z.infer<typeof Pacing>;
/** Venues whose limit applies per scope (Xetra: per market), the only ones a `pacing` means anything to. */
export const PACED_VENUES: readonly string[] = Object.freeze(['xetra']);

/**
 * Fleet-wide in-flight units of a connector created without `maxInflight` (`--max-inflight`), per
 * venue. Polygon serves one slow request at a time on its plans, so one unit; Alpaca, Finnhub and
 * FRED get two (the per-vendor executor design's caps, ready for when those venues land); Limitless
 * two, its documented maximum of concurrent requests. A venue not listed gets
 * {@link DEFAULT_MAX_INFLIGHT}. Documented in docs/reliability.md.
 */
export const VENUE_MAX_INFLIGHT_DEFAULTS: Readonly<Record<string, number>> = Object.freeze({ polygon: 1, alpaca: 2, finnhub: 2, fred: 2, limitless: 2 });

/**
 * Limitless's documented limit (at most 2 concurrent requests, at least 300 ms between calls, 429
 * beyond) as a connector: a cap of 2 and a GCRA budget of one request per 400 ms with headroom 1,
 * which grants no two requests closer than 400 ms: the documented 300 ms plus 100 ms for the time
 * between a grant and the request's arrival.
 */
export const LIMITLESS_CONNECTOR_DEFAULTS = Object.freeze({
  maxInflight: 2,
  rateLimit: Object.freeze({ policy: 'gcra' as const, limit: 1, periodMs: 400, headroom: 1 }),
});
/** In-flight cap of a venue without an entry in {@link VENUE_MAX_INFLIGHT_DEFAULTS}. */
export const DEFAULT_MAX_INFLIGHT = 4;

/** The in-flight cap a new connector of `venue` gets when none is given. */
export function defaultMaxInflight(venue: string): number {
  return VENUE_MAX_INFLIGHT_DEFAULTS[venue] ?? DEFAULT_MAX_INFLIGHT;
}

/**
 * A venue's documented request limit, which a connector created without `--limit`, `--period` and
 * `--policy` (`connectors upsert`) gets: Xetra 5 per 2 s across all its markets (the
 * proactive-limiter design's); Polymarket's CLOB `/book`, 1,500 per sliding 10 s (its Cloudflare
 * limits slide, so the policy does too); Limitless's {@link LIMITLESS_CONNECTOR_DEFAULTS}. A venue not
 * listed needs `--limit`; its period defaults to {@link DEFAULT_RATE_LIMIT_PERIOD_MS}, its policy to `fixed-window`.
 */
export const VENUE_RATE_LIMIT_DEFAULTS: Readonly<
  Record<string, Readonly<{ limit: number; periodMs: number; policy?: RateLimitPolicyName; headroom?: number }>>
> = Object.freeze({
  xetra: Object.freeze({ limit: 5, periodMs: 2000 }),
  polymarket: Object.freeze({ limit: 1500, periodMs: 10_000, policy: 'sliding-window' as const }),
  limitless: LIMITLESS_CONNECTOR_DEFAULTS.rateLimit,
});
/** Rate-limit period of a new connector of a venue without an entry in {@link VENUE_RATE_LIMIT_DEFAULTS}. */
export const DEFAULT_RATE_LIMIT_PERIOD_MS = 60_000;

/** Defaults of a connector's freeze after a 429/418 and its escalation, each written once (the schema below takes them from here). */
export const FREEZE_DEFAULTS = Object.freeze({
  /** Freeze after a 429 that carries no time, and the first step of the escalation. */
  freezeMs: 60_000,
  /** Cap of the escalated freeze. */
  freezeMaxMs: 900_000,
  /**
   * How long a worker uses a venue's freeze as it last read it while its subscription to announced
   * changes is up (`FreezeWatch`): only bounds how long a missed announcement could go unseen.
   */
  watchRefreshMs: 1000,
});

export const Connector = z
  .object({
    venue: VenueName,
    status: ConnectorStatus.default('active'),
    baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
    rateLimit: RateLimit,
    /** Fleet-wide in-flight units for this venue. @defaultValue per venue: {@link defaultMaxInflight} */
    maxInflight: z.number().int().positive().max(1000).optional(),
    /**
     * Fleet-wide freeze after a 429 that carries no Retry-After (the venue said nothing about when
     * to come back), before any escalation. Also how long a job waits before it is due again once
     * its unit failed for good (out of attempts, or unrecoverable). @defaultValue FREEZE_DEFAULTS.freezeMs
     */
    freezeMs: z.number().int().nonnegative().default(FREEZE_DEFAULTS.freezeMs),
    /**
     * Cap of the escalated freeze: a venue that answers 429 again within `freezeResetMs` after its
     * freeze ended is frozen twice as long as the last time, never longer than this. @defaultValue FREEZE_DEFAULTS.freezeMaxMs
     */
    freezeMaxMs: z.number().int().positive().default(FREEZE_DEFAULTS.freezeMaxMs),
    /**
     * Clean period that resets the escalation: no 429 for this long after a freeze ended and the
     * next 429 is frozen for `freezeMs` again. Absent: `freezeMs`.
     */
    freezeResetMs: z.number().int().positive().optional(),
    /** Venues budgeted per scope (Xetra's markets): how each scope's requests are spread. Absent: `even`. */
    pacing: Pacing.optional(),
    aimd: AimdSettings.default(() => AimdSettings.parse({})),
    bookCooldown: BookCooldownSettings.default({ ...DEFAULT_BOOK_COOLDOWN }),
    /** Book polling by a leased loop (venues with a book source); absent: one unit per poll. `null` on input turns it off. */
    bookLoop: BookLoopSettings.nullish().transform((v) => v ?? undefined),
    createdAt: z.number().int().optional(),
    updatedAt: z.number().int().optional(),
  })
  .refine((c) => c.freezeMaxMs >= c.freezeMs, { message: 'a cap at least freezeMs (--freeze-max >= --freeze)', path: ['freezeMaxMs'] })
  .refine((c) => c.pacing === undefined || PACED_VENUES.includes(c.venue), {
    message: `a pacing only for a venue budgeted per market (${PACED_VENUES.join(', ')})`,
    path: ['pacing'],
  })
  .transform(({ maxInflight, ...c }) => ({ ...c, maxInflight: maxInflight ?? defaultMaxInflight(c.venue) }));
export type Connector = z.infer<typeof Connector>;
/** What a caller gives to create or update a connector; defaults fill the rest. */
export type ConnectorInput = z.input<typeof Connector>;

/** The weight a connector actually spends per period: `floor(limit * headroom)`, at least 1. */
export function effectiveLimit(rateLimit: RateLimit): number {
  return Math.max(1, Math.floor(rateLimit.limit * rateLimit.headroom));
}
