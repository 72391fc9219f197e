import { systemClock, type Clock } from '@tickfleet/core';
import type { FleetRestartPolicy, WorkerHeartbeat } from './venue-control/worker-heartbeat.js';

/**
 * What the budget gate asks of the fallback while the shared budget is unreachable. There is no
 * weight in it: a worker that cannot reach the shared budget spends only what the budget already
 * granted it (its lease, see `BudgetGate`), then nothing until the budget answers again. A share
 * of the limit taken without the budget's word could be spent while the other workers still spend
 * the whole limit through it (a partition that cuts this worker off alone).
 */
export interface FallbackBudget {
  /** Whether the venue's shared budget failed on this worker and has not answered since. */
  isActive(venue: string): boolean;
  /** The shared budget failed: the venue runs on its lease only. */
  activate(venue: string): void;
  /** The shared budget answered again. */
  deactivate(venue: string): void;
}

export interface StoreOutageFallbackOptions {
  clock?: Clock;
}

/**
 * The store-outage state of one worker: per venue, since when its shared budget is unreachable;
 * and the venue's heartbeat in Redis (`WorkerHeartbeat`), which counts the venue's live workers for
 * AIMD and tells a fleet restart from one worker restarting.
 */
export class StoreOutageFallback implements FallbackBudget {
  /** Per venue this worker serves: since when (epoch ms) its shared budget is unreachable, or null. */
  private readonly outages = new Map<string, number | null>();
  private readonly clock: Clock;

  constructor(
    private readonly heartbeat: WorkerHeartbeat,
    options: StoreOutageFallbackOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Beats this worker's heartbeat for `venue`; call on every connector refresh. With `restart`, the
   * beat also resets the venue's AIMD concurrency when it finds the fleet restarted (see
   * {@link WorkerHeartbeat.beat}). Resolves the venue's live workers counted by the beat (this one included).
   */
  async configure(venue: string, restart?: FleetRestartPolicy): Promise<number> {
    if (!this.outages.has(venue)) this.outages.set(venue, null);
    return (await this.heartbeat.beat(venue, restart)).live;
  }

  isActive(venue: string): boolean {
    return (this.outages.get(venue) ?? null) !== null;
  }

  activate(venue: string): void {
    if (!this.isActive(venue)) this.outages.set(venue, this.clock.now());
  }

  deactivate(venue: string): void {
    if (this.outages.has(venue)) this.outages.set(venue, null);
  }

  /** Leaves every configured venue's live-worker set at once (clean shutdown), so the others' AIMD share grows now. */
  async leave(): Promise<void> {
    await Promise.all([...this.outages.keys()].map((venue) => this.heartbeat.leave(venue).catch(() => undefined)));
  }
}
