import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

export interface RateLimitedErrorOptions extends TickfleetErrorOptions {
  /** The venue said when to come back (a Retry-After header). @defaultValue false */
  fromVenue?: boolean;
}

/**
 * The venue answered 429 (or equivalent): retry no earlier than `retryAtMs` (epoch ms). When
 * `fromVenue` is false the venue gave no time and `retryAtMs` is only the adapter's guess; the
 * worker then freezes the venue for its connector's `freezeMs` (escalated on repeats) instead.
 */
export class RateLimitedError extends TickfleetError {
  readonly code = 'E_RATE_LIMITED' as const;
  readonly retryable = true;
  readonly fromVenue: boolean;

  constructor(
    readonly venue: string,
    readonly retryAtMs: number,
    message?: string,
    options: RateLimitedErrorOptions = {},
  ) {
    super(message ?? `${venue} rate limit hit; retry at ${new Date(retryAtMs).toISOString()}`, options);
    this.fromVenue = options.fromVenue ?? false;
  }
}
