import { systemClock, type Clock } from '@tickfleet/core';
import type { RedisClient } from '@tickfleet/queues';
import { BUDGET_DEFAULTS } from '../budget-defaults.js';

export interface FleetTimelineOptions {
  /** This process's clock. @defaultValue systemClock */
  clock?: Clock;
  /**
   * The fleet's clock as this process reads it: `'redis'`, the Redis server's `TIME`, or a clock a
   * test sets (a real server's clock cannot be set). @defaultValue 'redis' when `clock` is the
   * system clock, else `clock` itself (a test on a manual clock runs the whole fleet on it)
   */
  serverClock?: Pick<Clock, 'now'> | 'redis';
  /** How often the server's clock is read again. @defaultValue BUDGET_DEFAULTS.timeSyncMs */
  syncMs?: number;
}

/** Longest TIME round trip whose reading is used: a stalled process's reading keeps the previous offset. */
const MAX_SYNC_RTT_MS = 1000;
/**
 * Offsets this small are taken as 0: reading noise (a reading is good to half its round trip),
 * and processes on one host then agree on every time to the millisecond.
 */
const OFFSET_NOISE_MS = 100;

/**
 * The fleet's timeline for venue control: the Redis server's clock, the one the Redis budgets
 * already follow (`RedisBudgetsRepo`). Every time the venue control writes to Redis or reads from
 * it (a freeze's end, the order-book cooldown's end, AIMD windows, heartbeats) is on this
 * timeline; a caller's own times are moved onto it and back with the measured offset, so a worker
 * whose clock is off ends no fleet-wide pause early or late. Unlike the budgets' offset (ignored
 * up to 2 s, so that an estimate never opens a window early), this one is applied from 100 ms: a
 * pause has no window start to protect, and its end should be off by no more than that.
 */
export class FleetTimeline {
  private readonly clock: Clock;
  private readonly server: Pick<Clock, 'now'> | undefined;
  private readonly syncMs: number;
  private offset = 0;
  private syncedAtMono = Number.NEGATIVE_INFINITY;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    options: FleetTimelineOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    const server = options.serverClock ?? (this.clock === systemClock ? 'redis' : this.clock);
    this.server = server === 'redis' ? undefined : server;
    this.syncMs = options.syncMs ?? BUDGET_DEFAULTS.timeSyncMs;
  }

  /** Fleet time minus this process's clock, as last measured (0 before the first reading). */
  get offsetMs(): number {
    return this.offset;
  }

  /** Fleet time now, re-reading the server's clock when the last reading is older than `syncMs`. */
  async now(): Promise<number> {
    await this.sync();
    return this.knownNow();
  }

  /** Fleet time now by the last reading, without I/O. */
  knownNow(): number {
    return this.clock.now() + this.offset;
  }

  /** A time on this process's clock, on the fleet's timeline. */
  toFleet(localMs: number): number {
    return localMs + this.offset;
  }

  /** A time on the fleet's timeline, on this process's clock. */
  toLocal(fleetMs: number): number {
    return fleetMs - this.offset;
  }

  /** Reads the server's clock when due; concurrent callers share one reading. */
  sync(): Promise<void> {
    if (this.clock.monotonic() - this.syncedAtMono < this.syncMs) return Promise.resolve();
    this.pending ??= this.measure().finally(() => (this.pending = undefined));
    return this.pending;
  }

  /**
   * The server read its clock somewhere within a TIME round trip, so of three readings the one
   * with the shortest trip counts, taken at the middle of its trip.
   */
  private async measure(): Promise<void> {
    if (this.server === this.clock) {
      this.syncedAtMono = this.clock.monotonic();
      return;
    }
    let best: { rttMs: number; offsetMs: number } | undefined;
    for (let i = 0; i < 3; i++) {
      const before = this.clock.now();
      const startMono = this.clock.monotonic();
      const serverMs = await this.serverNow();
      const rttMs = this.clock.monotonic() - startMono;
      if (!best || rttMs < best.rttMs) best = { rttMs, offsetMs: Math.round(serverMs - (before + rttMs / 2)) };
    }
    if (best && best.rttMs <= MAX_SYNC_RTT_MS) this.offset = Math.abs(best.offsetMs) > OFFSET_NOISE_MS ? best.offsetMs : 0;
    // A stalled reading is tried again a second later.
    this.syncedAtMono = this.clock.monotonic() - (best && best.rttMs <= MAX_SYNC_RTT_MS ? 0 : Math.max(0, this.syncMs - 1000));
  }

  private async serverNow(): Promise<number> {
    if (this.server) return this.server.now();
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Number(micros) / 1000;
  }
}
