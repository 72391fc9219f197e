import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** The fleet's Redis did not answer within the bounded wait (at start, or for too long while running). */
export class RedisUnavailableError extends TickfleetError {
  readonly code = 'E_REDIS_UNAVAILABLE' as const;
  readonly retryable = true;

  constructor(
    /** The Redis URL with any password masked. */
    readonly url: string,
    message: string,
    options?: TickfleetErrorOptions,
  ) {
    super(message, options);
  }
}
