import { TickfleetError } from './tickfleet-error.js';

/** The venue's shared budget is spent until `retryAtMs`; the unit should yield, not fail. */
export class BudgetExhaustedError extends TickfleetError {
  readonly code = 'E_BUDGET_EXHAUSTED' as const;
  readonly retryable = true;

  constructor(
    readonly venue: string,
    readonly retryAtMs: number,
  ) {
    super(`${venue} budget spent; next allowance at ${new Date(retryAtMs).toISOString()}`);
  }
}
