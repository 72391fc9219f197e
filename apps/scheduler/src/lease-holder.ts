import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@tickfleet/queues';

/** What a scheduler's claims are recorded under now. */
export interface CurrentHolder {
  /** The fleet's Redis epoch: a random value kept in Redis, gone exactly when the queues are. */
  epoch: string;
  /** `<epoch>/<scheduler id>`, the `holder` of `store.jobs.claimDue`. */
  holder: string;
}

/**
 * Names the leases a scheduler takes in the store: `<epoch>/<id>`. The epoch is a random value
 * written once (never expiring) under the fleet's prefix in Redis, so Redis loses it exactly when
 * it loses the queues (a restart without persistence, the new private Redis of a restarted
 * `tickfleet up`). A lease naming another epoch points at a unit that is queued nowhere any more;
 * one naming the current epoch may point at a unit still queued or running.
 */
export class LeaseHolder {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly id: string,
  ) {}

  /** Reads the epoch, creating it when Redis has none (the first scheduler of a fresh Redis). */
  async current(): Promise<CurrentHolder> {
    let epoch = await this.redis.get(this.key);
    if (epoch === null) {
      // NX: of two schedulers creating it at once, both end up with the one that was written.
      const candidate = randomBytes(8).toString('hex');
      await this.redis.set(this.key, candidate, 'NX');
      epoch = (await this.redis.get(this.key)) ?? candidate;
    }
    return { epoch, holder: `${epoch}/${this.id}` };
  }

  /** The epoch part of a holder string (`<epoch>/<id>`). */
  static epochOf(holder: string): string {
    const i = holder.indexOf('/');
    return i < 0 ? holder : holder.slice(0, i);
  }
}
