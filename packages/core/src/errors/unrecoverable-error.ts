import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** A request the venue will never accept as sent (4xx other than rate limits). */
export class UnrecoverableError extends TickfleetError {
  readonly code = 'E_UNRECOVERABLE' as const;
  readonly retryable = false;

  constructor(
    readonly venue: string,
    message: string,
    readonly status?: number,
    options?: TickfleetErrorOptions,
  ) {
    super(message, options);
  }
}
