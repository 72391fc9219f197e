import { UnrecoverableError } from './unrecoverable-error.js';

/**
 * The venue refused the request's API key: missing, malformed or not registered (FRED answers 400
 * `Bad Request.  The value for variable api_key is not registered. …`). Retrying cannot help until
 * the operator sets a valid key. The message carries the venue's text, never the key.
 */
export class ApiKeyRejectedError extends UnrecoverableError {
  constructor(
    venue: string,
    status: number,
    readonly venueMessage: string,
  ) {
    super(venue, `${venue} rejected the API key (HTTP ${status}): ${venueMessage}`, status);
  }
}
