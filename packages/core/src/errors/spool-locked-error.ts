import { TickfleetError } from './tickfleet-error.js';

/**
 * Another live process writes the spool directory (its `spool.lock` holds that process's pid):
 * one spool has one writer. Not retryable as such — the caller takes another directory (a worker
 * its next `worker-<n>` slot) or reports the directory as in use.
 */
export class SpoolLockedError extends TickfleetError {
  readonly code = 'E_SPOOL_LOCKED' as const;
  readonly retryable = false;

  constructor(
    readonly dir: string,
    /** The live process holding the lock; undefined when the lock kept changing hands while this one tried to take it. */
    readonly holderPid: number | undefined,
  ) {
    super(
      holderPid === undefined
        ? `spool ${dir} is locked: its spool.lock reappeared after this process removed a stale one (another process is taking the directory over)`
        : `spool ${dir} is locked by pid ${holderPid}, a live process that writes it`,
    );
  }
}
