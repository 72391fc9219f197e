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
  /**
   * How long the release at the end of `withLock` may wait to go out in the same round trip as
   * this lock's next acquire of the same venue (sent by itself when no acquire comes within this
   * long). 0 releases at once, awaited. The lock is only ever held longer, never shorter.
   * @defaultValue 0
   */
  releaseDelayMs?: number;
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
 * A Redis lock per tickfleet job id, taken by every unit that moves the job's cursor (live units;
 * backfill chunks never move it) so two units never advance one cursor at the same time. The key sits under the venue's hash tag:
 * `<prefix>:venue:{binance}:lock:<jobId>`.
 */
export class JobLock {
  private readonly mutex: RedisMutex;
  private readonly prefix: string;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly releaseDelayMs: number;
  /** Releases not sent yet (`releaseDelayMs` > 0), per venue: lock key → token. */
  private readonly pending = new Map<string, Map<string, string>>();
  private flushTimer: NodeJS.Timeout | undefined;
  /** Sends of pending releases under way (awaited by `flushReleases`). */
  private readonly sending = new Set<Promise<void>>();

  constructor(redis: RedisClient, options: JobLockOptions = {}) {
    this.mutex = new RedisMutex(redis);
    this.prefix = assertPrefix(options.prefix ?? 'tickfleet');
    this.ttlMs = options.ttlMs ?? 30_000;
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(this.ttlMs / 3));
    this.releaseDelayMs = options.releaseDelayMs ?? 0;
  }

  key(jobId: string): string {
    return venueKey(this.prefix, parseJobId(jobId).venue, `lock:${jobId}`);
  }

  /**
   * Takes the lock of `jobId`; returns the token, or null when another holder has it. Pending
   * releases of the same venue (whose keys share its hash tag: one Redis Cluster slot) go first,
   * one of them in the same script call.
   */
  async acquire(jobId: string, ttlMs = this.ttlMs): Promise<string | null> {
    const token = RedisMutex.newToken();
    const venue = parseJobId(jobId).venue;
    const releases = this.pending.get(venue);
    this.pending.delete(venue);
    return (await this.mutex.acquire(this.key(jobId), token, ttlMs, releases)) ? token : null;
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
      if (!handle.lost) {
        if (this.releaseDelayMs > 0) this.releaseSoon(jobId, token);
        else await this.release(jobId, token).catch(() => false);
      }
    }
  }

  /**
   * Sends every pending release now and waits for them (and for sends already under way): for
   * shutdown, so a stopping worker leaves no lock behind for its TTL.
   */
  async flushReleases(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    for (const venue of [...this.pending.keys()]) this.sendPending(venue);
    await Promise.all([...this.sending]);
  }

  /**
   * Queues the release of a lock `withLock` held, for the next acquire's round trip or, failing
   * one within `releaseDelayMs`, a send of its own: a unit with a one-page run costs one lock round
   * trip instead of two. A release that cannot reach Redis leaves the lock to its TTL, as before.
   */
  private releaseSoon(jobId: string, token: string): void {
    const venue = parseJobId(jobId).venue;
    let group = this.pending.get(venue);
    if (!group) this.pending.set(venue, (group = new Map()));
    group.set(this.key(jobId), token);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      for (const v of [...this.pending.keys()]) this.sendPending(v);
    }, this.releaseDelayMs).unref();
  }

  private sendPending(venue: string): void {
    const releases = this.pending.get(venue);
    this.pending.delete(venue);
    if (!releases) return;
    const sent: Promise<void> = this.mutex
      .releaseAll(releases)
      .catch(() => undefined)
      .finally(() => this.sending.delete(sent));
    this.sending.add(sent);
  }
}
