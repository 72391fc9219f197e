import { TickfleetError } from './tickfleet-error.js';

/**
 * A unit lost the Redis lock on its job (a renewal found it gone or taken, e.g. after Redis
 * restarted or the worker stalled past the lock's TTL): another unit may now advance the same
 * cursor, so this one stops before it writes again. Retryable: the unit's next attempt takes the
 * lock afresh.
 */
export class JobLockLostError extends TickfleetError {
  readonly code = 'E_JOB_LOCK_LOST' as const;
  readonly retryable = true;

  constructor(readonly jobId: string) {
    super(`lost the job lock of ${jobId}: another unit may hold the job now; this unit stops before it writes again`);
  }
}
