/** A call a {@link TurnGroup} kept for the end of its turn, with the way to answer it. */
export interface KeptCall<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/**
 * The calls of one event-loop turn: the first `directPerTurn` run at once, the ones after them are
 * kept and handed to `onTurnEnd` together when the turn ends (`setImmediate`), which answers each.
 * For store writes that cost less together than one by one (a sum of budget acquires, one
 * transaction of job completions) without holding up a caller that has a turn almost to itself:
 * deferring every call cost the worker's live units 10-25% of their throughput
 * (docs/architecture.md).
 */
export class TurnGroup<T, R> {
  /** The open turn: how many calls ran at once, and the ones kept. Null between turns. */
  private turn: { direct: number; kept: KeptCall<T, R>[] } | null = null;

  constructor(
    private readonly directPerTurn: number,
    private readonly onTurnEnd: (kept: KeptCall<T, R>[]) => void,
  ) {}

  /** `now()` at once for the turn's first calls (its throw becomes a rejection); later, kept for the turn's end. */
  run(item: T, now: () => R | Promise<R>): Promise<R> {
    let turn = this.turn;
    if (!turn) {
      turn = this.turn = { direct: 0, kept: [] };
      setImmediate(() => this.endTurn());
    }
    if (turn.direct >= this.directPerTurn) {
      const kept = turn.kept;
      return new Promise((resolve, reject) => kept.push({ item, resolve, reject }));
    }
    turn.direct++;
    try {
      return Promise.resolve(now());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private endTurn(): void {
    const kept = this.turn?.kept ?? [];
    this.turn = null;
    if (kept.length > 0) this.onTurnEnd(kept);
  }
}
