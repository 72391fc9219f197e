import { UnrecoverableError, type TickfleetErrorOptions } from '@tickfleet/core';

/**
 * A 4xx (other than 418/429) the venue will answer the same way every time, with the venue's own
 * error code and message when its body carried them (Binance `{"code":-1121,"msg":"Invalid symbol."}`,
 * Polygon/Polymarket `{"error":"…"}`). An UnrecoverableError (code `E_UNRECOVERABLE`): callers that
 * catch `instanceof UnrecoverableError` handle it without knowing this subclass.
 */
export class VenueRejectedError extends UnrecoverableError {
  constructor(
    venue: string,
    status: number,
    readonly venueCode: string | number | undefined,
    readonly venueMessage: string | undefined,
    options?: TickfleetErrorOptions,
  ) {
    super(
      venue,
      `${venue} rejected the request with HTTP ${status}${venueCode === undefined ? '' : ` code ${venueCode}`}${venueMessage ? `: ${venueMessage}` : ''}`,
      status,
      options,
    );
  }
}
