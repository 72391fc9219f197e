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

export const Connector = z.object({
  venue: VenueName,
  status: ConnectorStatus.default('active'),
  baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
  rateLimit: RateLimit,
  /** Fleet-wide in-flight units for this venue. @defaultValue 4 */
  maxInflight: z.number().int().positive().max(1000).default(4),
  /**
   * How long a job waits before it is due again once its unit failed for good (out of attempts, or
   * unrecoverable; backfill chunks are marked failed instead). Not a 429 freeze: that ends at the
   * venue's Retry-After or the adapter's fallback. @defaultValue 60000
   */
  freezeMs: z.number().int().nonnegative().default(60_000),
  aimd: AimdSettings.default({ min: 1, increaseAfterMs: 30_000, maxFailureRatio: 0.2, maxP95LatencyMs: 10_000 }),
  createdAt: z.number().int().optional(),
  updatedAt: z.number().int().optional(),
});
export type Connector = z.infer<typeof Connector>;
/** What a caller gives to create or update a connector; defaults fill the rest. */
export type ConnectorInput = z.input<typeof Connector>;

/** The weight a connector actually spends per period: `floor(limit * headroom)`, at least 1. */
export function effectiveLimit(rateLimit: RateLimit): number {
  return Math.max(1, Math.floor(rateLimit.limit * rateLimit.headroom));
}
