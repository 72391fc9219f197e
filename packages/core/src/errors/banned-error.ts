import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/** The venue banned this client (Binance 418) until `bannedUntilMs` (epoch ms). */
export class BannedError extends TickfleetError {
  readonly code = 'E_BANNED' as const;
  readonly retryable = true;

  constructor(
    readonly venue: string,
    readonly bannedUntilMs: number,
    message?: string,
    options?: TickfleetErrorOptions,
  ) {
    super(message ?? `${venue} banned this client until ${new Date(bannedUntilMs).toISOString()}`, options);
  }
}
