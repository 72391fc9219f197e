import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

/**
 * A primary sink (SQLite, MongoDB, JSONL) failed every attempt of a batch: none of its records
 * is stored. It passes when the sink's database or disk comes back, so it is retryable; a
 * pipeline with a spool writes the batch there instead.
 */
export class SinkUnavailableError extends TickfleetError {
  readonly code = 'E_SINK_UNAVAILABLE' as const;
  readonly retryable = true;

  constructor(
    /** The sink adapter: `sqlite`, `mongodb` or `jsonl`. */
    readonly adapter: string,
    /** Attempts made for the batch, the first one included. */
    readonly attempts: number,
    /** Why the last attempt failed (the driver's or the file system's message). */
    readonly reason: string,
    message?: string,
    options?: TickfleetErrorOptions,
  ) {
    super(message ?? `${adapter} sink unavailable after ${attempts} attempts: ${reason}`, options);
  }
}
