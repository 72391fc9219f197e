import { ValidationError } from '@tickfleet/core';
import { openStore, type StateStore } from '@tickfleet/store';
import { ManualClock, tempDir } from '@tickfleet/testkit';
import { RecordedBudgets } from '../test/fixtures/recorded-budgets.js';
import type { AcquireResult } from './budget-types.js';
import { CoalescedAcquires } from './coalesced-acquires.js';

let store: StateStore;
let recorded: RecordedBudgets;
let budgets: CoalescedAcquires;

beforeEach(async () => {
  // Mid-window on a fixed clock: every acquire of a test lands in one window.
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0, 30));
  store = await openStore(tempDir('tickfleet-coalesced-').sqliteUrl('state.db'), { clock });
  recorded = new RecordedBudgets(store.budgets);
  // Every acquire waits for the turn's end, so a turn's sum is the whole turn (the worker sends its first 4 at once).
  budgets = new CoalescedAcquires(recorded, { directPerTurn: 0 });
});
afterEach(async () => {
  await store.close().catch(() => undefined);
});

async function venue(name: string, limit: number, options: { policy?: 'fixed-window' | 'gcra'; periodMs?: number } = {}): Promise<void> {
  await store.connectors.upsert({
    venue: name,
    baseUrl: `https://${name}.example.com`,
    rateLimit: { limit, periodMs: options.periodMs ?? 60_000, headroom: 1, policy: options.policy ?? 'fixed-window' },
  });
}

/** Outcomes in request order: the weight granted, or the refusal's reason. */
function outcomes(results: PromiseSettledResult<AcquireResult>[]): (string | number)[] {
  return results.map((r) => {
    if (r.status === 'rejected') return (r.reason as Error).name;
    return r.value.ok ? 'ok' : r.value.reason;
  });
}

describe('CoalescedAcquires', () => {
  it("spends one turn's acquires of a venue in one store operation of their sum", async () => {
    await venue('binance', 100);
    const weights = [1, 2, 3, 1, 5, 2, 2, 1, 4, 1];
    const results = await Promise.all(weights.map((w) => budgets.acquire('binance', w)));

    expect(results.every((r) => r.ok)).toBe(true);
    expect(recorded.acquires).toEqual([{ venue: 'binance', weight: 22 }]);
    expect((await store.budgets.usage('binance'))?.used).toBe(22);
    // Every request is told the usage after the one grant.
    expect(results.map((r) => (r.ok ? r.used : -1))).toEqual(weights.map(() => 22));
  });

  it('by default sends the first 4 acquires of a turn at once and only the rest as one sum', async () => {
    await venue('binance', 100);
    const direct = new CoalescedAcquires(recorded);
    // One acquire alone is answered before the turn ends: it never waits for the others.
    const order: string[] = [];
    const alone = direct.acquire('binance', 1).then(() => order.push('answered'));
    setImmediate(() => order.push('turn ended'));
    await alone;
    expect(order).toEqual(['answered']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['answered', 'turn ended']);

    recorded.acquires.length = 0;
    const results = await Promise.all([1, 2, 3, 1, 5, 2].map((w) => direct.acquire('binance', w)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(recorded.acquires.map((a) => a.weight)).toEqual([1, 2, 3, 1, 7]);
    expect((await store.budgets.usage('binance'))?.used).toBe(15);
  });

  it('grants exactly what fits when the sum does not: each request on its own, in arrival order', async () => {
    await venue('binance', 10);
    const results = await Promise.allSettled(Array.from({ length: 15 }, () => budgets.acquire('binance', 1)));

    expect(outcomes(results)).toEqual([...Array(10).fill('ok'), ...Array(5).fill('exhausted')]);
    expect((await store.budgets.usage('binance'))?.used).toBe(10);
    // The refused sum, then the fifteen one by one.
    expect(recorded.acquires.map((a) => a.weight)).toEqual([15, ...Array(15).fill(1)]);
  });

  it('GCRA: a sum over the whole limit is tried request by request, and the bucket holds what was granted', async () => {
    await venue('kraken', 5, { policy: 'gcra', periodMs: 1000 });
    const results = await Promise.allSettled([2, 2, 2].map((w) => budgets.acquire('kraken', w)));

    expect(outcomes(results)).toEqual(['ok', 'ok', 'exhausted']);
    expect(recorded.acquires.map((a) => a.weight)).toEqual([6, 2, 2, 2]);
    expect((await store.budgets.usage('kraken'))?.used).toBe(4);
  });

  it('a paused venue refuses the whole turn with one answer', async () => {
    await venue('binance', 100);
    await store.connectors.setStatus('binance', 'paused');
    const results = await Promise.allSettled([1, 1, 1].map((w) => budgets.acquire('binance', w)));

    expect(outcomes(results)).toEqual(['paused', 'paused', 'paused']);
    expect(recorded.acquires).toHaveLength(1);
    expect((await store.budgets.usage('binance'))?.used).toBe(0);
  });

  it('a bad weight fails its own request only, naming the weight', async () => {
    await venue('binance', 100);
    const results = await Promise.allSettled([budgets.acquire('binance', 2), budgets.acquire('binance', 1.5), budgets.acquire('binance', 3)]);

    expect(outcomes(results)).toEqual(['ok', 'ValidationError', 'ok']);
    const refused = results[1] as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(ValidationError);
    expect((refused.reason as Error).message).toMatch(/weight/);
    expect(recorded.acquires).toEqual([{ venue: 'binance', weight: 5 }]);
    expect((await store.budgets.usage('binance'))?.used).toBe(5);
  });

  it('keeps venues apart, and acquires of later turns go to the store on their own', async () => {
    await venue('binance', 100);
    await venue('kraken', 100);
    await Promise.all([budgets.acquire('binance', 1), budgets.acquire('kraken', 2), budgets.acquire('binance', 3)]);
    await budgets.acquire('binance', 4);
    await budgets.acquire('binance', 5);

    expect(recorded.acquires).toEqual([
      { venue: 'binance', weight: 4 },
      { venue: 'kraken', weight: 2 },
      { venue: 'binance', weight: 4 },
      { venue: 'binance', weight: 5 },
    ]);
    expect((await store.budgets.usage('binance'))?.used).toBe(13);
    expect((await store.budgets.usage('kraken'))?.used).toBe(2);
  });

  it('a store failure fails every request of the turn with the same error, and the next turn reaches the store again', async () => {
    await venue('binance', 100);
    // An unknown venue is an answer, not a failure: the whole turn gets it.
    const unknown = await Promise.all([budgets.acquire('nowhere', 1), budgets.acquire('nowhere', 1)]);
    expect(unknown.map((r) => (r.ok ? 'ok' : r.reason))).toEqual(['unknown-venue', 'unknown-venue']);

    await store.close();
    const failed = await Promise.allSettled([budgets.acquire('binance', 1), budgets.acquire('binance', 2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const [first, second] = failed as [PromiseRejectedResult, PromiseRejectedResult];
    expect(second.reason).toBe(first.reason);
    expect(recorded.acquires.at(-1)).toEqual({ venue: 'binance', weight: 3 });
    // Nothing is left waiting: the next turn reaches the store again.
    await expect(budgets.acquire('binance', 4)).rejects.toThrow();
    expect(recorded.acquires.at(-1)).toEqual({ venue: 'binance', weight: 4 });
  });
});
