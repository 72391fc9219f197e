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

/**
 * Exhaustiveness guard for switches over unions: types rule the call out, so reaching it means a
 * value from outside (a stored job, a message) that this version does not know.
 */
export function assertNever(value: never, what = 'value'): never {
  throw new ValidationError(what, 'a value this version of tickfleet handles', value);
}
