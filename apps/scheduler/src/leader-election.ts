import { renewEveryMsFor } from '@tickfleet/core';
import type { Logger } from '@tickfleet/telemetry';
import { RedisMutex, type RedisClient } from '@tickfleet/queues';
import { SCHEDULER_DEFAULTS } from './scheduler-defaults.js';

export interface LeaderElectionOptions {
  /** The lock key, shared by every scheduler replica of one fleet. */
  key: string;
  /** Identity written into the lock (shows who leads). */
  id: string;
  /**
   * Lock lifetime: a dead leader is replaced at most this long (plus one follower tick) after
   * its last renewal. @defaultValue {@link SCHEDULER_DEFAULTS.leaderTtlMs}
   */
  ttlMs?: number;
  /** Renewal period; a third of the TTL, so two renewals may fail before the lock lapses. @defaultValue {@link renewEveryMsFor}(ttlMs) */
  renewEveryMs?: number;
  logger?: Logger;
  /** Called whenever leadership is gained or lost. */
  onChange?: (leader: boolean) => void;
}

/**
 * Leader election over one Redis lock: followers try to take it (`tryLead`, each tick); the leader
 * renews it every `renewEveryMs` with a token-checked extend, and steps down the moment a renewal
 * finds the lock gone or taken. Correctness never depends on a single leader — claims are atomic
 * in the store and unit ids are deterministic — so a paused leader overlapping its successor for
 * a moment costs duplicate work at worst, never duplicate units.
 */
export class LeaderElection {
  readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly mutex: RedisMutex;
  private readonly token: string;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  /** When the lock was last confirmed ours (performance.now()). */
  private confirmedAtMs = 0;

  constructor(
    redis: RedisClient,
    private readonly options: LeaderElectionOptions,
  ) {
    this.ttlMs = options.ttlMs ?? SCHEDULER_DEFAULTS.leaderTtlMs;
    this.renewEveryMs = options.renewEveryMs ?? renewEveryMsFor(this.ttlMs);
    this.mutex = new RedisMutex(redis);
    this.token = `${options.id}:${RedisMutex.newToken()}`;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Takes (or keeps) the lead if it is free; returns whether this replica leads now. */
  async tryLead(): Promise<boolean> {
    if (this.leading) return true;
    const startedAt = performance.now();
    if (await this.mutex.acquire(this.options.key, this.token, this.ttlMs)) {
      this.confirmedAtMs = startedAt;
      this.setLeading(true);
    }
    return this.leading;
  }

  /** The token of the current leader (any replica), or null. */
  currentLeader(): Promise<string | null> {
    return this.mutex.holder(this.options.key);
  }

  /** Steps down and deletes the lock, so a follower takes over at its next tick instead of after the TTL. */
  async resign(): Promise<void> {
    const was = this.leading;
    this.setLeading(false);
    if (was) await this.mutex.release(this.options.key, this.token).catch(() => false);
  }

  private async renew(): Promise<void> {
    // Unreachable Redis: the lock lapses TTL after the last confirmed renewal, and another
    // replica may lead from then on, so stop leading at that point even without an answer.
    if (performance.now() - this.confirmedAtMs >= this.ttlMs) {
      this.options.logger?.warn({ key: this.options.key }, 'leader lock not renewed within its TTL; stepping down');
      this.setLeading(false);
      return;
    }
    const startedAt = performance.now();
    try {
      if (await this.mutex.extend(this.options.key, this.token, this.ttlMs)) {
        this.confirmedAtMs = startedAt;
      } else if (this.leading) {
        this.options.logger?.warn({ key: this.options.key }, 'leader lock lost; stepping down');
        this.setLeading(false);
      }
    } catch (err) {
      this.options.logger?.warn({ err }, 'leader lock renewal failed');
    }
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    if (leading) {
      this.timer = setInterval(() => void this.renew(), this.renewEveryMs);
      this.timer.unref();
      this.options.logger?.info({ key: this.options.key }, 'leading');
    } else {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    this.options.onChange?.(leading);
  }
}
