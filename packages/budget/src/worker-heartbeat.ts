import { systemClock, type Clock } from '@tickfleet/core';
import { luaCommand, QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';

const COMMANDS = new URL('./commands/', import.meta.url);

export interface WorkerHeartbeatOptions {
  /** @defaultValue 'tickfleet' */
  prefix?: string;
  /** A worker unseen for this long no longer counts as live. @defaultValue 15000 */
  livenessMs?: number;
  clock?: Clock;
}

/**
 * Which workers serve a venue: each beats into a RedisClient sorted set per venue (score = last beat),
 * which is how {@link StoreOutageFallback} knows `liveWorkers` when the state store is down.
 */
export class WorkerHeartbeat {
  private readonly prefix: string;
  private readonly livenessMs: number;
  private readonly clock: Clock;
  private readonly beatCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    readonly workerId: string,
    options: WorkerHeartbeatOptions = {},
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.livenessMs = options.livenessMs ?? 15_000;
    this.clock = options.clock ?? systemClock;
    this.beatCmd = luaCommand(redis, COMMANDS, 'heartbeatWorker-1.lua');
  }

  /** Marks this worker alive for `venue`; returns how many workers are live for it now. */
  async beat(venue: string): Promise<number> {
    return Number(await this.beatCmd([this.key(venue)], [this.clock.now(), this.workerId, this.livenessMs]));
  }

  /** Live workers of `venue` without beating. */
  async liveWorkers(venue: string): Promise<number> {
    return this.redis.zcount(this.key(venue), this.clock.now() - this.livenessMs, '+inf');
  }

  /** Leaves the venue at once (clean shutdown), so the others' fallback share grows now. */
  async leave(venue: string): Promise<void> {
    await this.redis.zrem(this.key(venue), this.workerId);
  }

  private key(venue: string): string {
    return venueKey(this.prefix, venue, 'workers');
  }
}
