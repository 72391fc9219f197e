import { setImmediate as turnEnd } from 'node:timers/promises';
import { type KeptCall, TurnGroup } from './turn-group.js';

describe('TurnGroup', () => {
  it("runs a turn's first calls at once and hands the rest over together when the turn ends", async () => {
    const ends: number[][] = [];
    const group = new TurnGroup<number, string>(2, (kept: KeptCall<number, string>[]) => {
      ends.push(kept.map((k) => k.item));
      for (const k of kept) k.resolve(`together ${k.item}`);
    });
    const ran: number[] = [];
    const answers = [1, 2, 3, 4, 5].map((n) => group.run(n, () => (ran.push(n), `now ${n}`)));
    expect(ran).toEqual([1, 2]);
    expect(ends).toEqual([]);
    expect(await Promise.all(answers)).toEqual(['now 1', 'now 2', 'together 3', 'together 4', 'together 5']);
    expect(ends).toEqual([[3, 4, 5]]);

    // A new turn starts over: its first two run at once again, and a turn that keeps nothing hands nothing over.
    await turnEnd();
    expect(await Promise.all([group.run(6, () => 'now 6'), group.run(7, async () => 'now 7')])).toEqual(['now 6', 'now 7']);
    await turnEnd();
    expect(ends).toEqual([[3, 4, 5]]);
  });

  it('turns a throw of a call run at once into its rejection, and the kept calls still go', async () => {
    const group = new TurnGroup<number, number>(1, (kept) => {
      for (const k of kept) {
        if (k.item < 0) k.reject(new Error(`kept ${k.item}`));
        else k.resolve(k.item);
      }
    });
    const results = await Promise.allSettled([
      group.run(0, () => {
        throw new Error('now 0');
      }),
      group.run(1, () => 1),
      group.run(-2, () => -2),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['now 0', 1, 'kept -2']);
  });
});
