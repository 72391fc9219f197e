import { TickfleetError } from './tickfleet-error.js';

/**
 * A JSONL partition's writer lock (`.writer.lock` in the partition directory, holding a pid) stayed
 * with another live process longer than the sink waits. Each writer holds it only while it checks
 * and appends one batch, so this means a stuck writer; retryable (the pipeline retries, then spools).
 */
export class JsonlPartitionLockedError extends TickfleetError {
  readonly code = 'E_JSONL_PARTITION_LOCKED' as const;
  readonly retryable = true;

  constructor(
    readonly partition: string,
    readonly holderPid: number,
    readonly waitedMs: number,
  ) {
    super(`jsonl partition ${partition} is locked by pid ${holderPid}, a live writer, for more than ${waitedMs} ms`);
  }
}
