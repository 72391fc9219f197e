import { formatDurationMs } from '../duration.js';
import { UnrecoverableError } from './unrecoverable-error.js';

/**
 * A request weighs more than the venue's budget grants in a whole window: no wait or retry can
 * ever send it, so the unit fails at once instead of yielding forever. The fix is a larger limit
 * or headroom on the connector, or a lighter request (e.g. a smaller book depth).
 */
export class RequestTooHeavyError extends UnrecoverableError {
  constructor(
    venue: string,
    readonly weight: number,
    /** The venue's effective limit per window, `floor(limit * headroom)`. */
    readonly limit: number,
    /** The window's length; null when the store no longer knows the venue. */
    readonly periodMs: number | null,
  ) {
    const per = periodMs === null ? 'per window' : `per ${formatDurationMs(periodMs)} window`;
    super(
      venue,
      `${venue}: a request of weight ${weight} can never be sent: the venue's effective budget is ${limit} ${per} ` +
        `(limit x headroom). Raise the connector's limit or headroom so that limit x headroom is at least ${weight} ` +
        `(tickfleet connectors upsert ${venue} --limit <n> --headroom <fraction>), or make the request lighter.`,
    );
  }
}
