/**
 * Stable error codes: data for what leaves the process (JSON output, exit codes, metric labels,
 * job failure causes). Code decides by class (`err instanceof SpoolFullError`), never by code
 * string or message.
 */
export type ErrorCode =
  | 'E_VALIDATION'
  | 'E_CONFIG'
  | 'E_NOT_FOUND'
  | 'E_RATE_LIMITED'
  | 'E_BANNED'
  | 'E_TRANSIENT'
  | 'E_UNRECOVERABLE'
  | 'E_MALFORMED_PAYLOAD'
  | 'E_STORE_UNAVAILABLE'
  | 'E_SINK_UNAVAILABLE'
  | 'E_SPOOL_LOCKED'
  | 'E_JSONL_PARTITION_LOCKED'
  | 'E_JOB_LOCK_LOST'
  | 'E_PIPELINE_CLOSED'
  | 'E_REDIS_UNAVAILABLE'
  | 'E_BUDGET_EXHAUSTED'
  | 'E_SPOOL_FULL';

export interface TickfleetErrorOptions {
  cause?: unknown;
}

/** Base of every tickfleet error: a stable `code` and whether retrying the same call can succeed. */
export abstract class TickfleetError extends Error {
  abstract readonly code: ErrorCode;
  /** True when the same operation may succeed later without any change to its input. */
  abstract readonly retryable: boolean;

  constructor(message: string, options: TickfleetErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message, retryable: this.retryable };
  }
}
