import { TickfleetError } from './tickfleet-error.js';

/** Bad input: names the offending field or argument and what was expected. Never retryable. */
export class ValidationError extends TickfleetError {
  readonly code = 'E_VALIDATION' as const;
  readonly retryable = false;

  constructor(
    readonly field: string,
    readonly expected: string,
    readonly received?: unknown,
  ) {
    super(`invalid ${field}: expected ${expected}${received === undefined ? '' : `, got ${JSON.stringify(received)}`}`);
  }
}
