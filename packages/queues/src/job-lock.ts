import { JobLockLostError } from '@tickfleet/core';
import type { RedisClient } from './redis-connection.js';
import { parseJobId } from '@tickfleet/core';
import { assertPrefix, venueKey } from './names.js';
import { RedisMutex } from './redis-mutex.js';

export interface JobLockOptions {
  /** @defaultValue QUEUE_PREFIX ('tickfleet') */
  prefix?: string;
  /** Lock lifetime; a holder that dies frees the job after this long. @defaultValue 30000 */
  ttlMs?: number;
  /** How often a running `withLock` extends the lock. @defaultValue ttlMs / 3 */
  renewEveryMs?: number;
}

/** A held job lock. `lost` turns true when a renewal found the lock gone or taken. */
export interface JobLockHandle {
  readonly jobId: string;
  readonly token: string;
  readonly lost: boolean;
  /** Aborted when the lock is lost, so the unit can stop before touching the cursor. */
  readonly signal: AbortSignal;
}

/**
 * A Redis lock per tickfleet job id, taken by every unit of the job (live or backfill chunk) so
 * two units never advance one cursor at the same time. The key sits under the venue's hash tag:
 * `<prefix>:venue:{binance}:lock:<jobId>`.
 */
export class JobLock {
  private readonly mutex: RedisMutex;
  private readonly prefix: string;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;

  constructor(redis: RedisClient, options: JobLockOptions = {}) {
    this.mutex = new RedisMutex(redis);
    this.prefix = assertPrefix(options.prefix ?? 'tickfleet');
    this.ttlMs = options.ttlMs ?? 30_000;
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(this.ttlMs / 3));
  }

  key(jobId: string): string {
    return venueKey(this.prefix, parseJobId(jobId).venue, `lock:${jobId}`);
  }

  /** Takes the lock of `jobId`; returns the token, or null when another holder has it. */
  async acquire(jobId: string, ttlMs = this.ttlMs): Promise<string | null> {
    const token = RedisMutex.newToken();
    return (await this.mutex.acquire(this.key(jobId), token, ttlMs)) ? token : null;
  }

  /** Extends the lock if `token` still holds it. */
  renew(jobId: string, token: string, ttlMs = this.ttlMs): Promise<boolean> {
    return this.mutex.extend(this.key(jobId), token, ttlMs);
  }

  /** Releases the lock if `token` holds it. */
  release(jobId: string, token: string): Promise<boolean> {
    return this.mutex.release(this.key(jobId), token);
  }

  /** Whether anyone holds the lock of `jobId`. */
  async isLocked(jobId: string): Promise<boolean> {
    return (await this.mutex.holder(this.key(jobId))) !== null;
  }

  /**
   * Runs `fn` holding the lock of `jobId`, renewing it every `renewEveryMs`, and releases it
   * after. Returns `{ acquired: false }` without running `fn` when the lock is held elsewhere.
   */
  async withLock<T>(jobId: string, fn: (lock: JobLockHandle) => Promise<T>): Promise<{ acquired: true; value: T } | { acquired: false }> {
    const token = await this.acquire(jobId);
    if (token === null) return { acquired: false };
    const controller = new AbortController();
    const handle = { jobId, token, lost: false, signal: controller.signal };
    const markLost = (): void => {
      handle.lost = true;
      controller.abort(new JobLockLostError(jobId));
    };
    const timer = setInterval(() => {
      this.renew(jobId, token).then(
        (ok) => {
          if (!ok) markLost();
        },
        // A renewal that cannot reach Redis is retried at the next interval; the TTL covers 3.
        () => undefined,
      );
    }, this.renewEveryMs);
    try {
      return { acquired: true, value: await fn(handle) };
    } finally {
      clearInterval(timer);
      if (!handle.lost) await this.release(jobId, token).catch(() => false);
    }
  }
}
