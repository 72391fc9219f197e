import { z } from 'zod';
import { VenueName } from './names.js';

export const CONNECTOR_STATUSES = ['active', 'paused', 'disabled'] as const;
export const ConnectorStatus = z.enum(CONNECTOR_STATUSES);
export type ConnectorStatus = z.infer<typeof ConnectorStatus>;

export const RateLimitPolicyName = z.enum(['fixed-window', 'gcra']);
export type RateLimitPolicyName = z.infer<typeof RateLimitPolicyName>;

/**
 * How a venue counts requests.
 * - `fixed-window`: at most `limit * headroom` weight per clock-aligned window of `periodMs`
 *   (`windowStart = floor(now / periodMs) * periodMs`), as Binance counts per clock minute.
 * - `gcra`: a leaky bucket of capacity `limit * headroom` that drains fully every `periodMs`
 *   (Kraken- and Coinbase-style sliding limits); exact retry-after, smooth spacing.
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

/** Additive-increase / multiplicative-decrease bounds for a venue's fleet-wide concurrency. */
export const AimdSettings = z.object({
  /** @defaultValue 1 */
  min: z.number().int().positive().default(1),
  /** Ceiling; defaults to the connector's `maxInflight`. */
  max: z.number().int().positive().optional(),
  /** Clean operation needed before adding one. @defaultValue 30000 */
  increaseAfterMs: z.number().int().positive().default(30_000),
  /** Failure ratio above which one is subtracted. @defaultValue 0.2 */
  maxFailureRatio: z.number().min(0).max(1).default(0.2),
  /** p95 latency above which one is subtracted. @defaultValue 10000 */
  maxP95LatencyMs: z.number().int().positive().default(10_000),
});
export type AimdSettings = z.infer<typeof AimdSettings>;

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
 * FRED get two (the per-vendor executor design's caps, ready for when those venues land). A venue
 * not listed gets {@link DEFAULT_MAX_INFLIGHT}. Documented in docs/reliability.md.
 */
export const VENUE_MAX_INFLIGHT_DEFAULTS: Readonly<Record<string, number>> = Object.freeze({ polygon: 1, alpaca: 2, finnhub: 2, fred: 2 });
/** In-flight cap of a venue without an entry in {@link VENUE_MAX_INFLIGHT_DEFAULTS}. */
export const DEFAULT_MAX_INFLIGHT = 4;

/** The in-flight cap a new connector of `venue` gets when none is given. */
export function defaultMaxInflight(venue: string): number {
  return VENUE_MAX_INFLIGHT_DEFAULTS[venue] ?? DEFAULT_MAX_INFLIGHT;
}

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
     * its unit failed for good (out of attempts, or unrecoverable). @defaultValue 60000
     */
    freezeMs: z.number().int().nonnegative().default(60_000),
    /**
     * Cap of the escalated freeze: a venue that answers 429 again within `freezeResetMs` after its
     * freeze ended is frozen twice as long as the last time, never longer than this. @defaultValue 900000
     */
    freezeMaxMs: z.number().int().positive().default(900_000),
    /**
     * Clean period that resets the escalation: no 429 for this long after a freeze ended and the
     * next 429 is frozen for `freezeMs` again. Absent: `freezeMs`.
     */
    freezeResetMs: z.number().int().positive().optional(),
    /** Venues budgeted per scope (Xetra's markets): how each scope's requests are spread. Absent: `even`. */
    pacing: Pacing.optional(),
    aimd: AimdSettings.default({ min: 1, increaseAfterMs: 30_000, maxFailureRatio: 0.2, maxP95LatencyMs: 10_000 }),
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
