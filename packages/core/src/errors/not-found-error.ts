import { TickfleetError } from './tickfleet-error.js';

export class NotFoundError extends TickfleetError {
  readonly code = 'E_NOT_FOUND' as const;
  readonly retryable = false;

  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} ${JSON.stringify(id)} not found`);
  }
}
