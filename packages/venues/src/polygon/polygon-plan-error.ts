import { VenueRejectedError } from '../venue-rejected-error.js';

/**
 * Polygon answered 403 NOT_AUTHORIZED: the key's plan does not cover the request (`Your plan doesn't
 * include this data timeframe`: a range older than the plan's history, or data the plan lacks).
 * Asking again cannot help; a shorter range or another plan can. Names the range asked for.
 */
export class PolygonPlanError extends VenueRejectedError {
  constructor(
    readonly fromMs: number,
    readonly toMs: number,
    venueMessage: string | undefined,
  ) {
    super(
      'polygon',
      403,
      'NOT_AUTHORIZED',
      `${venueMessage ?? 'not authorized'} (requested ${new Date(fromMs).toISOString()} to ${new Date(toMs).toISOString()})`,
    );
  }
}
