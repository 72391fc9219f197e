import { UnrecoverableError } from './unrecoverable-error.js';

/** The venue does not know the requested series id (FRED: 400 `Bad Request.  The series does not exist.`). */
export class UnknownSeriesError extends UnrecoverableError {
  constructor(
    venue: string,
    readonly seriesId: string,
    status: number,
    readonly venueMessage: string,
  ) {
    super(venue, `${venue} has no series ${JSON.stringify(seriesId)} (HTTP ${status}): ${venueMessage}`, status);
  }
}
