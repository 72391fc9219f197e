import { systemClock, WORKER_LIVENESS_MS, type Clock } from '@tickfleet/core';
import { QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { budgetCommand } from '../internal/commands.js';
import { FleetTimeline } from './fleet-timeline.js';

/** How a beat treats a venue's AIMD concurrency after a fleet restart (see heartbeatWorker-3.lua). */
export interface FleetRestartPolicy {
  /** No live worker for longer than this is a fleet restart. 0 never resets. */
  afterMs: number;
  /** The concurrency a restarted fleet starts from. */
  startConcurrency: number;
}

export interface WorkerHeartbeatOptions {
  /** Key prefix. @defaultValue QUEUE_PREFIX */
  prefix?: string;
  /** A worker unseen for this long no longer counts as live. @defaultValue WORKER_LIVENESS_MS */
  livenessMs?: number;
  clock?: Clock;
  /** The fleet's timeline the beats are on (share the venue control's). @defaultValue one on `clock` */
  timeline?: FleetTimeline;
}

/**
 * Which workers serve a venue: each beats into a RedisClient sorted set per venue (score = last beat),
 * which is how a worker knows the venue's `liveWorkers` (for its AIMD share) from Redis alone. The
 * same beat notices a fleet restart (no worker beat for the venue for longer than the restart
 * period) and sets the venue's AIMD concurrency back to its start value, so a fleet that was down
 * re-learns instead of resuming from a value learnt under other conditions. Beats are on the fleet's
 * timeline: a worker whose clock runs ahead would otherwise prune the others as dead.
 */
export class WorkerHeartbeat {
  private readonly prefix: string;
  private readonly livenessMs: number;
  private readonly timeline: FleetTimeline;
  private readonly beatCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    readonly workerId: string,
    options: WorkerHeartbeatOptions = {},
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.livenessMs = options.livenessMs ?? WORKER_LIVENESS_MS;
    this.timeline = options.timeline ?? new FleetTimeline(redis, { clock: options.clock ?? systemClock });
    this.beatCmd = budgetCommand(redis, 'heartbeatWorker-3.lua');
  }

  /**
   * Marks this worker alive for `venue`; returns how many workers are live for it now and whether
   * this beat found a restarted fleet and reset the venue's concurrency (never without `restart`).
   */
  async beat(venue: string, restart?: FleetRestartPolicy): Promise<{ live: number; fleetRestarted: boolean }> {
    const [live, reset] = (await this.beatCmd(
      [this.key(venue), venueKey(this.prefix, venue, 'control'), venueKey(this.prefix, venue, 'latency')],
      [await this.timeline.now(), this.workerId, this.livenessMs, restart?.afterMs ?? 0, restart?.startConcurrency ?? 1],
    )) as [number, number];
    return { live: Number(live), fleetRestarted: reset === 1 };
  }

  /** Live workers of `venue` without beating. */
  async liveWorkers(venue: string): Promise<number> {
    return this.redis.zcount(this.key(venue), (await this.timeline.now()) - this.livenessMs, '+inf');
  }

  /** Leaves the venue at once (clean shutdown), so the others' share grows now. */
  async leave(venue: string): Promise<void> {
    await this.redis.zrem(this.key(venue), this.workerId);
  }

  private key(venue: string): string {
    return venueKey(this.prefix, venue, 'workers');
  }
}
