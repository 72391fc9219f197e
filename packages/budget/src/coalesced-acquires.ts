import { ValidationError } from '@tickfleet/core';
import type { AcquireResult, BudgetUsage, BudgetsRepo } from './budget-types.js';

interface Waiter {
  weight: number;
  resolve(result: AcquireResult): void;
  reject(err: unknown): void;
}

/**
 * A worker's budgets with the acquires of one venue that arrive in the same event-loop turn, past
 * the first few, spent in one store operation: their sum in one atomic acquire, whose grant answers
 * every request in it.
 *
 * A grant of the sum is exactly what the requests one after another at that instant would have
 * got, all granted: a fixed window takes `used + sum <= limit`, GCRA moves its arrival time by
 * `sum * periodMs / limit`. So the limit holds as it does for single acquires. When the sum is
 * refused (the window has less left than the sum, or the sum alone is over the limit), each
 * request is tried on its own, in arrival order, so whatever fits is still granted. A paused,
 * disabled or unknown venue refuses whatever the weight, so that one answer is everyone's.
 *
 * Why: every acquire is a write on the state store, and with several worker processes on one
 * SQLite file each write costs more the more processes share it
 * (`scripts/bench/sqlite-contention.ts`). A busy worker starts many requests per turn (all the
 * responses one socket read delivered): in the fleet-scale benchmark, with every acquire of a turn
 * summed, one store acquire served 10-11 requests with 4 worker processes and 32 with one
 * (docs/benchmarks/fleet.md). The first `directPerTurn` of a turn still go to the store at once:
 * a worker with a few units in flight gains little from a sum of two or three, and holding all of
 * its acquires and completions until the turn's end cost its live units 10-25% of their
 * throughput (`scripts/bench/hot-path.ts --scenarios live`).
 */
export class CoalescedAcquires implements BudgetsRepo {
  /** Per venue, in this turn: how many acquires went to the store at once, and the ones after them. */
  private readonly turns = new Map<string, { direct: number; later: Waiter[] }>();
  private readonly directPerTurn: number;

  /** @param options.directPerTurn acquires of a venue per turn sent at once, before the rest wait for the turn's end. @defaultValue 4 */
  constructor(
    private readonly inner: BudgetsRepo,
    options: { directPerTurn?: number } = {},
  ) {
    this.directPerTurn = options.directPerTurn ?? 4;
  }

  acquire(venue: string, weight: number): Promise<AcquireResult> {
    // Checked here: a bad weight must fail its own request, not a sum that hides it.
    if (!Number.isInteger(weight) || weight <= 0) return Promise.reject(new ValidationError('weight', 'a positive integer', weight));
    let turn = this.turns.get(venue);
    if (!turn) {
      turn = { direct: 0, later: [] };
      this.turns.set(venue, turn);
      setImmediate(() => void this.endTurn(venue));
    }
    if (turn.direct < this.directPerTurn) {
      turn.direct++;
      return this.inner.acquire(venue, weight);
    }
    const later = turn.later;
    return new Promise((resolve, reject) => later.push({ weight, resolve, reject }));
  }

  observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void> {
    return this.inner.observe(venue, usedWeight, windowStartMs);
  }

  usage(venue: string): Promise<BudgetUsage | null> {
    return this.inner.usage(venue);
  }

  /** The turn's end: the acquires past its first few, as one. */
  private async endTurn(venue: string): Promise<void> {
    const waiters = this.turns.get(venue)?.later ?? [];
    this.turns.delete(venue);
    if (waiters.length === 0) return;
    if (waiters.length === 1) {
      const [only] = waiters as [Waiter];
      return this.inner.acquire(venue, only.weight).then(only.resolve, only.reject);
    }
    let total = 0;
    for (const w of waiters) total += w.weight;
    let result: AcquireResult;
    try {
      result = await this.inner.acquire(venue, total);
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    if (result.ok || (result.reason !== 'exhausted' && result.reason !== 'too-heavy')) {
      for (const w of waiters) w.resolve(result);
      return;
    }
    for (const w of waiters) {
      await this.inner.acquire(venue, w.weight).then(w.resolve, w.reject);
    }
  }
}
