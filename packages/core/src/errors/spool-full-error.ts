import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/**
 * Why a spool could not take records: its disk or quota ran out (`disk`: ENOSPC/EDQUOT, the
 * filesystem's verdict), or its own `maxTotalBytes` cap was reached (`cap`).
 */
export type SpoolFullReason = 'disk' | 'cap';

/**
 * Records were NOT acknowledged because the spool (the sink's fallback) is full: nothing was
 * lost that the caller still holds, nothing partial was kept. The unit that pushed them should
 * go back to the queue until `retryAtMs` without burning an attempt — the condition passes when
 * the sink returns and replay frees space, or an operator frees the disk.
 */
export class SpoolFullError extends TickfleetError {
  readonly code = 'E_SPOOL_FULL' as const;
  readonly retryable = true;

  constructor(
    readonly dir: string,
    readonly reason: SpoolFullReason,
    readonly retryAtMs: number,
    message?: string,
    options?: TickfleetErrorOptions,
  ) {
    super(
      message ?? `spool ${dir} is full (${reason === 'disk' ? 'no space left on its disk' : 'its maxTotalBytes cap is reached'}); records not acknowledged`,
      options,
    );
  }
}
