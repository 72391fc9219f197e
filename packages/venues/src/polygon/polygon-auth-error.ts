import { VenueRejectedError } from '../venue-rejected-error.js';

/**
 * Polygon refused the API key (HTTP 401): none reached it (`API Key was not provided`) or it does
 * not know the key (`Unknown API Key`). Retrying cannot help until POLYGON_API_KEY is fixed; the
 * key itself is never part of the error.
 */
export class PolygonAuthError extends VenueRejectedError {
  constructor(
    readonly reason: 'missing-key' | 'unknown-key',
    venueMessage: string | undefined,
  ) {
    super('polygon', 401, undefined, venueMessage);
  }
}
