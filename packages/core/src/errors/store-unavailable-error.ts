import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/**
 * The state store could not be reached or used (down, locked, damaged), or the spool behind a
 * sink could not take records (closed, an I/O error other than a full disk). A sink that fails is
 * SinkUnavailableError.
 */
export class StoreUnavailableError extends TickfleetError {
  readonly code = 'E_STORE_UNAVAILABLE' as const;
  readonly retryable = true;

  constructor(message: string, options?: TickfleetErrorOptions) {
    super(message, options);
  }
}
