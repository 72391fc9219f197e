import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** The state store or a sink could not be reached. */
export class StoreUnavailableError extends TickfleetError {
  readonly code = 'E_STORE_UNAVAILABLE' as const;
  readonly retryable = true;

  constructor(message: string, options?: TickfleetErrorOptions) {
    super(message, options);
  }
}
