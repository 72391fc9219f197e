import { randomUUID } from 'node:crypto';
import { type Job, JobLockLostError, renewEveryMsFor, StoreUnavailableError } from '@tickfleet/core';
import { type StateStore, UNIT_LOCK_TTL_MS } from '@tickfleet/store';

/** A unit's hold on its job's lock (`JobsRepo.lockUnit`), with the job as the lock read it. */
export interface UnitLockHandle {
  readonly jobId: string;
  /**
   * The lock's token, which the unit's completion carries (`JobCompletion.unitToken`) so the same
   * write frees it; null for a run without the lock (the store was away when it started).
   */
  readonly token: string | null;
  /** The job as the lock read it; null when it runs without the lock (the unit reads it then). */
  readonly job: Job | null;
  /** Turns true when a renewal found the lock gone or taken: the unit stops before it writes again. */
  readonly lost: boolean;
  /** Set by the unit when its completion freed the lock (nothing is left to release). */
  released: boolean;
}

export type UnitLockOutcome<T> = { acquired: true; value: T } | { acquired: false; heldUntil: number };

export interface UnitLocksOptions {
  /** Lock lifetime; a holder that dies frees the job after this long. @defaultValue {@link UNIT_LOCK_TTL_MS} */
  ttlMs?: number;
  /** A lock held longer than this is renewed (one sweep for all held locks). @defaultValue {@link renewEveryMsFor}(ttlMs) */
  renewEveryMs?: number;
}

interface Held {
  handle: UnitLockHandle & { lost: boolean };
  takenAtMs: number;
  onLost: (err: JobLockLostError) => void;
}

/**
 * The unit lock of each job a unit moves the cursor of, kept in the state store: one write takes
 * the lock and reads the job (the unit needs no separate read), and the unit's completion frees it
 * in the write that stores its cursor, fenced by the token. A Redis lock cost a round trip to
 * another process per unit on top of the store's read and completion (issue 12: live units ran
 * 0.69 of a hand-made worker with it, 0.80-0.96 without any lock, `hot-path.ts --scenarios live`).
 *
 * Most units finish in milliseconds and are never renewed: one sweep every `renewEveryMs / 2`
 * renews the locks held longer than `renewEveryMs`, so a unit costs no timer of its own.
 */
export class UnitLocks {
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly held = new Set<Held>();
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly now: () => number,
    options: UnitLocksOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? UNIT_LOCK_TTL_MS;
    this.renewEveryMs = options.renewEveryMs ?? renewEveryMsFor(this.ttlMs);
  }

  /**
   * Runs `fn` holding the unit lock of `jobId` and frees the lock after, unless the unit's
   * completion did (`handle.released`). Returns `{ acquired: false }` without running `fn` while
   * another unit holds it. When the store cannot be reached, `fn` runs without the lock (token and
   * job null): the unit reads the job itself (a read may still work, or the worker's last copy) and
   * spends what its budget lease still holds; its writes fail while the store is away, and a cursor only
   * ever moves forward to pages already stored, so a run without the lock cannot lose or duplicate data.
   * `onLost` is called when a renewal finds the lock taken. `claimToken`: the token the claim of
   * the unit's run handed the lock to (`dueUnitToken(unit.dueAt)`), which the unit then only reads.
   */
  async withLock<T>(
    jobId: string,
    onLost: (err: JobLockLostError) => void,
    fn: (lock: UnitLockHandle) => Promise<T>,
    claimToken?: string,
  ): Promise<UnitLockOutcome<T>> {
    const token = claimToken ?? randomUUID();
    let result;
    try {
      result = await this.store.jobs.lockUnit(jobId, token, this.ttlMs);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      return { acquired: true, value: await fn({ jobId, token: null, job: null, lost: false, released: true }) };
    }
    // An unknown job: nothing to lock; the unit finds it gone and ends as skipped.
    if (result === null) return { acquired: true, value: await fn({ jobId, token: null, job: null, lost: false, released: true }) };
    if (!result.locked) return { acquired: false, heldUntil: result.heldUntil };
    const held: Held = { handle: { jobId, token, job: result.job, lost: false, released: false }, takenAtMs: this.now(), onLost };
    this.hold(held);
    try {
      return { acquired: true, value: await fn(held.handle) };
    } finally {
      this.held.delete(held);
      if (this.held.size === 0) this.stopSweep();
      // Left to its TTL when the store cannot take the release now.
      if (!held.handle.released && !held.handle.lost) await this.store.jobs.releaseUnitLock(jobId, token).catch(() => undefined);
    }
  }

  /** Stops the renewal sweep (the locks still held expire after their TTL). */
  close(): void {
    this.stopSweep();
    this.held.clear();
  }

  private hold(held: Held): void {
    this.held.add(held);
    this.sweep ??= setInterval(() => this.renewLongHeld(), Math.max(1, Math.floor(this.renewEveryMs / 2)));
    this.sweep.unref();
  }

  private stopSweep(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
  }

  private renewLongHeld(): void {
    const now = this.now();
    for (const held of this.held) {
      if (now - held.takenAtMs < this.renewEveryMs || held.handle.lost) continue;
      const { jobId, token } = held.handle;
      if (token === null) continue;
      held.takenAtMs = now;
      this.store.jobs.renewUnitLock(jobId, token, this.ttlMs).then(
        (ok) => {
          if (ok || !this.held.has(held)) return;
          held.handle.lost = true;
          held.onLost(new JobLockLostError(jobId));
        },
        // A renewal that cannot reach the store is tried again at the next sweep; the TTL covers 3.
        () => {
          held.takenAtMs = now - this.renewEveryMs;
        },
      );
    }
  }
}
