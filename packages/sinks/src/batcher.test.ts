import { Batcher } from './index.js';

describe('Batcher', () => {
  it('flushes by size, and by age for a partial batch', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number, string>(async (items) => (batches.push(items), items.map((i) => `ok${i}`)), { maxBatchSize: 3, maxBatchAgeMs: 50 });
    // Taken before the pushes: the partial batch's age runs from its push, so a pause of this process
    // between the pushes and here cannot eat into the wait measured.
    const started = Date.now();
    const a = b.push([1, 2]);
    const c = b.push([3, 4]);
    expect(await a).toEqual(['ok1', 'ok2']);
    expect(batches[0]).toEqual([1, 2, 3]);
    expect(await c).toEqual(['ok3', 'ok4']);
    expect(batches[1]).toEqual([4]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
  });

  it('by default writes a partial batch as soon as no write runs: same-turn pushes share it, pushes during a write share the next', async () => {
    const batches: number[][] = [];
    let release: () => void = () => undefined;
    let gate: Promise<void> = Promise.resolve();
    const b = new Batcher<number, number>(async (items) => {
      batches.push(items);
      await gate;
      return items;
    });
    gate = new Promise<void>((r) => (release = r));
    const first = [b.push([1]), b.push([2, 3])];
    // Let the first write start, then push while it is running.
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1, 2, 3]]);
    const during = [b.push([4]), b.push([5])];
    release();
    expect(await Promise.all([...first, ...during])).toEqual([[1], [2, 3], [4], [5]]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('makes the producer wait while maxPendingRecords are queued or in flight', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const b = new Batcher<number, number>(
      async (items) => {
        await gate;
        return items;
      },
      { maxBatchSize: 4, maxBatchAgeMs: 1, maxPendingRecords: 4 },
    );
    const first = b.push([1, 2, 3, 4]);
    let secondAdmitted = false;
    const second = b.push([5]).then((r) => ((secondAdmitted = true), r));
    await new Promise((r) => setTimeout(r, 50));
    expect(b.pending).toBe(4);
    expect(secondAdmitted).toBe(false);
    release();
    expect(await first).toEqual([1, 2, 3, 4]);
    expect(await second).toEqual([5]);
  });

  it('rejects the pushes of a failed batch and keeps serving later ones', async () => {
    let fail = true;
    const b = new Batcher<number, number>(
      async (items) => {
        if (fail) throw new Error('down');
        return items;
      },
      { maxBatchSize: 10, maxBatchAgeMs: 1 },
    );
    await expect(b.push([1])).rejects.toThrow('down');
    fail = false;
    expect(await b.push([2])).toEqual([2]);
  });
});
