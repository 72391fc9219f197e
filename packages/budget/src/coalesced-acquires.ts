import { type KeptCall, TurnGroup, ValidationError } from '@tickfleet/core';
import { BUDGET_DEFAULTS } from './budget-defaults.js';
import type { AcquireResult, BudgetUsage, BudgetsRepo } from './budget-types.js';

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
 * (docs/architecture.md). The first `directPerTurn` of a turn still go to the store at once
 * ({@link TurnGroup}): a worker with a few units in flight gains little from a sum of two or three.
 */
export class CoalescedAcquires implements BudgetsRepo {
  /** Per venue: this turn's acquires (the weight each asks for). */
  private readonly turns = new Map<string, TurnGroup<number, AcquireResult>>();

  /** @param options.directPerTurn acquires of a venue per turn sent at once, before the rest wait for the turn's end. @defaultValue BUDGET_DEFAULTS.directPerTurn */
  constructor(
    private readonly inner: BudgetsRepo,
    private readonly options: { directPerTurn?: number } = {},
  ) {}

  acquire(venue: string, weight: number): Promise<AcquireResult> {
    // Checked here: a bad weight must fail its own request, not a sum that hides it.
    if (!Number.isInteger(weight) || weight <= 0) return Promise.reject(new ValidationError('weight', 'a positive integer', weight));
    let turn = this.turns.get(venue);
    if (!turn) {
      turn = new TurnGroup(this.options.directPerTurn ?? BUDGET_DEFAULTS.directPerTurn, (kept) => void this.spendTogether(venue, kept));
      this.turns.set(venue, turn);
    }
    return turn.run(weight, () => this.inner.acquire(venue, weight));
  }

  observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void> {
    return this.inner.observe(venue, usedWeight, windowStartMs);
  }

  usage(venue: string): Promise<BudgetUsage | null> {
    return this.inner.usage(venue);
  }

  /** The turn's end: the acquires past its first few, as one acquire of their sum. */
  private async spendTogether(venue: string, kept: KeptCall<number, AcquireResult>[]): Promise<void> {
    let total = 0;
    for (const k of kept) total += k.item;
    let result: AcquireResult;
    try {
      result = await this.inner.acquire(venue, total);
    } catch (err) {
      for (const k of kept) k.reject(err);
      return;
    }
    // A refused sum of several: each on its own, so whatever fits is still granted.
    if (result.ok || kept.length === 1 || (result.reason !== 'exhausted' && result.reason !== 'too-heavy')) {
      for (const k of kept) k.resolve(result);
      return;
    }
    for (const k of kept) {
      await this.inner.acquire(venue, k.item).then(k.resolve, k.reject);
    }
  }
}
