import { randomUUID } from 'node:crypto';
import type { ConnectorInput, ConnectorStatus } from '@tickfleet/core';
import type { AcquireResult, BudgetsRepo } from '../src/index.js';

/**
 * What the budget cases need: a BudgetsRepo and the connectors it reads each venue's limit,
 * policy and status from (the state store's own, for the store budgets and the Redis budget alike).
 */
export interface BudgetFixture {
  connectors: { upsert(input: ConnectorInput): Promise<unknown>; setStatus(venue: string, status: ConnectorStatus): Promise<unknown> };
  budgets: BudgetsRepo;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A connector of `venue` as the budget cases create it. */
export function connector(venue: string, over: Partial<ConnectorInput> = {}): ConnectorInput {
  return { venue, baseUrl: `https://${venue}.example.com`, rateLimit: { limit: 1200, periodMs: 60_000 }, ...over };
}

/** A venue name no other case uses (the budgets of all cases share one store or Redis). */
export function venueName(): string {
  return `v${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/**
 * Creates a fresh venue with `setup`, sleeps until just after a window boundary (local clock), runs
 * `fn` and retries with another venue when the budget's decisions (their `atMs`, on the clock the
 * budget decides on) still straddled two windows: a loaded machine, a remote server clock. The
 * venue is set up before the sleep, so only `fn`'s calls have to fit into the window.
 */
async function inOneWindow(
  periodMs: number,
  setup: (venue: string) => Promise<unknown>,
  fn: (venue: string) => Promise<AcquireResult[]>,
): Promise<{ venue: string; results: AcquireResult[] }> {
  const attempts = 12;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const venue = venueName();
    await setup(venue);
    await sleep(periodMs - (Date.now() % periodMs) + 5);
    const results = await fn(venue);
    const windows = new Set(results.map((r) => Math.floor(r.atMs / periodMs)));
    if (windows.size === 1) return { venue, results };
  }
  throw new Error(`could not fit the budget checks into one ${periodMs} ms window in ${attempts} attempts`);
}

/**
 * The behaviour every BudgetsRepo must show (SQLite, MongoDB, Redis), registered as test cases in
 * the caller's describe block; `fixture` is read before each case. Budget cases use real time
 * (MongoDB and Redis decide on their server's clock), with short windows.
 */
export function budgetContractCases(fixture: () => BudgetFixture): void {
  let store: BudgetFixture;
  beforeEach(() => {
    store = fixture();
  });

  it('fixed window: grants up to the limit, refuses until the next aligned window', async () => {
    const periodMs = 200;
    const { venue, results } = await inOneWindow(
      periodMs,
      (v) => store.connectors.upsert(connector(v, { rateLimit: { limit: 5, periodMs, headroom: 1 } })),
      async (v) => {
        const out: AcquireResult[] = [];
        for (const w of [2, 2, 1, 1]) out.push(await store.budgets.acquire(v, w));
        return out;
      },
    );
    const [a, b, c, d] = results;
    expect(a).toMatchObject({ ok: true, used: 2, limit: 5 });
    expect(b).toMatchObject({ ok: true, used: 4 });
    expect(c).toMatchObject({ ok: true, used: 5 });
    if (!a?.ok) throw new Error('first acquire refused');
    const windowStartMs = a.windowStartMs ?? NaN;
    expect(windowStartMs % periodMs).toBe(0);
    expect(a.atMs - windowStartMs).toBeLessThan(periodMs);
    expect(d).toEqual({ ok: false, reason: 'exhausted', retryAtMs: windowStartMs + periodMs, limit: 5, atMs: expect.any(Number) });
    await sleep(windowStartMs + periodMs - Date.now() + 2);
    const next = await store.budgets.acquire(venue, 5);
    expect(next).toMatchObject({ ok: true, used: 5 });
    expect(next.ok && next.windowStartMs).toBeGreaterThanOrEqual(windowStartMs + periodMs);
  });

  it('applies headroom and refuses a weight above the whole limit as too-heavy', async () => {
    const venue = venueName();
    // An hour's window: the acquires below land in one (a minute's could end between them).
    await store.connectors.upsert(connector(venue, { rateLimit: { limit: 100, periodMs: 3_600_000, headroom: 0.5 } }));
    const granted = await store.budgets.acquire(venue, 50);
    expect(granted).toMatchObject({ ok: true, used: 50, limit: 50 });
    const refused = await store.budgets.acquire(venue, 1);
    expect(refused).toMatchObject({ ok: false, reason: 'exhausted', limit: 50 });
    const heavy = await store.budgets.acquire(venue, 51);
    expect(heavy).toMatchObject({ ok: false, reason: 'too-heavy' });
    expect(heavy.ok ? 0 : heavy.retryAtMs - heavy.atMs).toBe(3_600_000);
    await expect(store.budgets.acquire(venue, 0)).rejects.toMatchObject({ code: 'E_VALIDATION', field: 'weight' });
  });

  it('gcra: bursts up to the limit, then spaces grants by periodMs / limit', async () => {
    // T = 800 / 4 = 200 ms per unit of weight
    const T = 200;
    /**
     * One run on a fresh venue, or null when the run was too slow to show the policy (on the
     * budget's own clock, `atMs`): the refusal of the fifth came a whole T after the burst began
     * (a unit had drained), or the weight-2 request came 3 T after it (two units had drained
     * since the single grant), or the usage was read after the bucket could have emptied.
     */
    const run = async () => {
      const venue = venueName();
      await store.connectors.upsert(connector(venue, { rateLimit: { policy: 'gcra', limit: 4, periodMs: 4 * T, headroom: 1 } }));
      const burst: AcquireResult[] = [];
      for (let i = 0; i < 4; i++) burst.push(await store.budgets.acquire(venue, 1));
      const first = burst[0]?.atMs ?? 0;
      const refused = await store.budgets.acquire(venue, 1);
      if (refused.atMs - first >= T) return null;
      if (refused.ok) return { venue, burst, first, refused, single: undefined, two: undefined, usage: undefined };
      await sleep(refused.retryAtMs - Date.now() + 2);
      const single = await store.budgets.acquire(venue, 1);
      const two = await store.budgets.acquire(venue, 2);
      if (two.atMs - first >= 3 * T) return null;
      const usage = await store.budgets.usage(venue);
      if (Date.now() - first >= 5 * T) return null;
      return { venue, burst, first, refused, single, two, usage };
    };
    let result: Awaited<ReturnType<typeof run>> = null;
    for (let attempt = 0; attempt < 8 && !result; attempt++) result = await run();
    if (!result) throw new Error('could not run the GCRA checks within their time bounds in 8 attempts');
    const { venue, burst, first, refused, single, two, usage } = result;
    expect(burst.every((r) => r.ok)).toBe(true);
    expect(burst[3]).toMatchObject({ ok: true, limit: 4, used: 4 });
    if (refused.ok) throw new Error('fifth acquire in a 4-per-800ms bucket was granted');
    expect(refused.reason).toBe('exhausted');
    // the bucket drains one unit T after the burst started
    expect(refused.retryAtMs).toBeGreaterThanOrEqual(first + T);
    expect(refused.retryAtMs).toBeLessThanOrEqual(refused.atMs + T);
    expect(single).toMatchObject({ ok: true });
    // weight 2 needs two drained units: refused with a retry at most 2 T later
    // (less by however long this test took since the last grant)
    if (two?.ok) throw new Error('weight 2 granted into a full bucket');
    expect(two!.retryAtMs - two!.atMs).toBeGreaterThan(0);
    expect(two!.retryAtMs - two!.atMs).toBeLessThanOrEqual(2 * T);
    expect(usage).toMatchObject({ venue, policy: 'gcra', limit: 4, periodMs: 4 * T, windowStartMs: null });
    expect(usage?.used).toBeGreaterThanOrEqual(1);
    expect(usage?.used).toBeLessThanOrEqual(4);
    expect(usage?.resetAtMs).toBeGreaterThan(two!.atMs);
  });

  it('observe raises the current window to what the venue reported, never lowers it', async () => {
    const periodMs = 1000;
    const {
      venue,
      results: [first, afterObserve, refused],
    } = await inOneWindow(
      periodMs,
      (v) => store.connectors.upsert(connector(v, { rateLimit: { limit: 10, periodMs, headroom: 1 } })),
      async (v) => {
        const a = await store.budgets.acquire(v, 1);
        const ws = a.ok ? (a.windowStartMs ?? 0) : 0;
        await store.budgets.observe(v, 8, ws);
        await store.budgets.observe(v, 3, ws); // lower: ignored
        await store.budgets.observe(v, 10, ws - periodMs); // an old window: ignored
        const b = await store.budgets.acquire(v, 2);
        const c = await store.budgets.acquire(v, 1);
        return [a, b, c];
      },
    );
    expect(first).toMatchObject({ ok: true, used: 1 });
    expect(afterObserve).toMatchObject({ ok: true, used: 10 });
    expect(refused).toMatchObject({ ok: false, reason: 'exhausted' });
    const usage = await store.budgets.usage(venue);
    expect(usage).toMatchObject({ venue, policy: 'fixed-window', limit: 10, periodMs });
    expect(usage?.resetAtMs).toBe((usage?.windowStartMs ?? 0) + periodMs);
    if (usage?.windowStartMs === (first?.ok ? first.windowStartMs : -1)) expect(usage?.used).toBe(10);
  });

  it('observe seeds a window nothing was acquired in yet; usage reports it', async () => {
    const venue = venueName();
    await store.connectors.upsert(connector(venue, { rateLimit: { limit: 1200, periodMs: 60_000, headroom: 1 } }));
    const before = await store.budgets.usage(venue);
    expect(before).toMatchObject({ used: 0, limit: 1200 });
    const ws = before?.windowStartMs ?? 0;
    await store.budgets.observe(venue, 700, ws);
    const after = await store.budgets.usage(venue);
    if (after?.windowStartMs === ws) {
      expect(after.used).toBe(700);
      expect(await store.budgets.acquire(venue, 500)).toMatchObject({ ok: true, used: 1200 });
      expect(await store.budgets.acquire(venue, 1)).toMatchObject({ ok: false, reason: 'exhausted' });
    }
    expect(await store.budgets.usage('nope')).toBeNull();
  });

  it('a paused or disabled connector refuses; an unknown venue refuses', async () => {
    const venue = venueName();
    await store.connectors.upsert(connector(venue, { rateLimit: { limit: 10, periodMs: 1000, headroom: 1 } }));
    await store.connectors.setStatus(venue, 'paused');
    const paused = await store.budgets.acquire(venue, 1);
    expect(paused).toMatchObject({ ok: false, reason: 'paused' });
    expect(paused.ok ? 0 : paused.retryAtMs - paused.atMs).toBe(1000);
    await store.connectors.setStatus(venue, 'disabled');
    expect(await store.budgets.acquire(venue, 1)).toMatchObject({ ok: false, reason: 'disabled' });
    await store.connectors.setStatus(venue, 'active');
    expect(await store.budgets.acquire(venue, 1)).toMatchObject({ ok: true });
    expect(await store.budgets.acquire('nope', 1)).toMatchObject({ ok: false, reason: 'unknown-venue' });
  });

  it('follows a policy change made by a connector upsert', async () => {
    const venue = venueName();
    // An hour's window: the two acquires land in one (a minute's could end between them).
    await store.connectors.upsert(connector(venue, { rateLimit: { limit: 1, periodMs: 3_600_000, headroom: 1 } }));
    expect(await store.budgets.acquire(venue, 1)).toMatchObject({ ok: true });
    expect(await store.budgets.acquire(venue, 1)).toMatchObject({ ok: false });
    await store.connectors.upsert(connector(venue, { rateLimit: { policy: 'gcra', limit: 3, periodMs: 60_000, headroom: 1 } }));
    const r = await store.budgets.acquire(venue, 3);
    expect(r).toMatchObject({ ok: true, limit: 3 });
    expect(r.ok && r.windowStartMs).toBeFalsy();
    expect((await store.budgets.usage(venue))?.policy).toBe('gcra');
  });
}
