import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** A failure that may pass by itself: 5xx, timeout, refused or reset connection. */
export class TransientError extends TickfleetError {
  readonly code = 'E_TRANSIENT' as const;
  readonly retryable = true;

  constructor(
    readonly venue: string,
    message: string,
    readonly status?: number,
    options?: TickfleetErrorOptions,
  ) {
    super(message, options);
  }
}
