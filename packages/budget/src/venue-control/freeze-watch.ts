import { FREEZE_DEFAULTS, systemClock, type Clock } from '@tickfleet/core';
import { QUEUE_PREFIX, type RedisClient } from '@tickfleet/queues';
import type { FreezeSource } from '../budget-gate.js';
import { venueMarksChannel, type FleetVenueControl } from './fleet-venue-control.js';

export interface FreezeWatchOptions {
  /** Key prefix (tests pass a fresh one). @defaultValue QUEUE_PREFIX */
  prefix?: string;
  clock?: Clock;
  /**
   * How long a venue's marks read from Redis are used without reading them again, while the
   * subscription is up. Changes are announced at once; this only bounds how long a missed
   * announcement could go unseen. @defaultValue FREEZE_DEFAULTS.watchRefreshMs
   */
  refreshMs?: number;
}

interface Marks {
  frozenUntilMs: number;
  readAtMs: number;
}

/**
 * A worker's view of the fleet-wide mark the budget gate checks before every request: the venue's
 * freeze record. Reading it from Redis before every request was one round trip per request on the
 * hot path, with another process (redis-server) to wake on a busy machine. Here each venue's mark
 * is read once and kept until a change is announced on the venue-marks channel (every freeze write
 * publishes the venue's name there), or for `refreshMs` at most.
 *
 * Nothing is cached while the subscription is down (not yet subscribed, reconnecting): every check
 * then reads Redis, as before, and a resubscription drops what was kept (announcements may have
 * been missed meanwhile). A change is seen by other workers one pub/sub delivery after it was
 * written: the same order of time as a read racing the write, which the per-request read had too.
 */
export class FreezeWatch implements FreezeSource {
  private readonly marks = new Map<string, Marks>();
  private readonly reads = new Map<string, { generation: number; marks: Promise<Marks> }>();
  private readonly clock: Clock;
  private readonly refreshMs: number;
  private readonly channel: string;
  private subscribed = false;
  /** Bumped whenever kept marks may be stale, so a read that started before is not kept. */
  private generation = 0;

  constructor(
    private readonly control: Pick<FleetVenueControl, 'frozenUntil'>,
    private readonly subscriber: RedisClient,
    options: FreezeWatchOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.refreshMs = options.refreshMs ?? FREEZE_DEFAULTS.watchRefreshMs;
    this.channel = venueMarksChannel(options.prefix ?? QUEUE_PREFIX);
  }

  /** Subscribes to announcements; until this resolves every check reads Redis. */
  async start(): Promise<void> {
    // The worker's main connection reports Redis being away (rate-limited); this one only stops
    // keeping marks while it is down. Without a listener ioredis prints every failed reconnect.
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (channel: string, venue: string) => {
      if (channel !== this.channel) return;
      this.generation += 1;
      this.marks.delete(venue);
    });
    // ioredis resubscribes by itself after a reconnect; what was announced meanwhile is lost.
    this.subscriber.on('close', () => this.forget(false));
    this.subscriber.on('ready', () => this.forget(true));
    await this.subscriber.subscribe(this.channel);
    this.forget(true);
  }

  async stop(): Promise<void> {
    this.forget(false);
    this.subscriber.disconnect();
  }

  async frozenForMs(venue: string): Promise<number> {
    return Math.max(0, (await this.read(venue)).frozenUntilMs - this.clock.now());
  }

  private forget(subscribed: boolean): void {
    this.subscribed = subscribed;
    this.generation += 1;
    this.marks.clear();
  }

  private read(venue: string): Promise<Marks> {
    const kept = this.marks.get(venue);
    if (kept && this.subscribed && this.clock.now() - kept.readAtMs < this.refreshMs) return Promise.resolve(kept);
    // Concurrent checks of one venue share one read, unless a change was announced since it began.
    const pending = this.reads.get(venue);
    if (pending && pending.generation === this.generation) return pending.marks;
    const generation = this.generation;
    const marks = this.control
      .frozenUntil(venue)
      .then((frozenUntilMs) => {
        const read = { frozenUntilMs: frozenUntilMs ?? 0, readAtMs: this.clock.now() };
        if (this.subscribed && generation === this.generation) this.marks.set(venue, read);
        return read;
      })
      .finally(() => {
        if (this.reads.get(venue)?.marks === marks) this.reads.delete(venue);
      });
    this.reads.set(venue, { generation, marks });
    return marks;
  }
}
