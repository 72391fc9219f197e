import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** The venue answered 429 (or equivalent): retry no earlier than `retryAtMs` (epoch ms). */
export class RateLimitedError extends TickfleetError {
  readonly code = 'E_RATE_LIMITED' as const;
  readonly retryable = true;

  constructor(
    readonly venue: string,
    readonly retryAtMs: number,
    message?: string,
    options?: TickfleetErrorOptions,
  ) {
    super(message ?? `${venue} rate limit hit; retry at ${new Date(retryAtMs).toISOString()}`, options);
  }
}
