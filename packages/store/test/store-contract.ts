import { randomUUID } from 'node:crypto';
import { type ConnectorInput, type JobInput, JobLockLostError, MAX_UNIVERSE_SYMBOLS, NotFoundError, ValidationError } from '@tickfleet/core';
import { budgetContractCases } from '../../budget/test/budget-contract.js';
import { dueUnitToken, type StateStore } from '../src/index.js';

/**
 * Opens a store in the namespace `namespace` (a fresh one for an unseen name; the same data for a
 * name seen before: same SQLite file, same MongoDB collection prefix).
 */
export type OpenStoreInNamespace = (namespace: string) => Promise<StateStore>;

/**
 * Per test: a fresh namespace (`prefix` + random) and `openAgain`, which opens a store in it (the
 * first call of a test makes the test's store; later calls, more connections to the same data);
 * every store a test opened is closed after it.
 */
export function storePerTest(open: OpenStoreInNamespace, prefix: string): { openAgain: () => Promise<StateStore> } {
  const opened: StateStore[] = [];
  let ns = '';
  beforeEach(() => {
    ns = `${prefix}${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close().catch(() => undefined)));
  });
  return {
    openAgain: async () => {
      const s = await open(ns);
      opened.push(s);
      return s;
    },
  };
}

const T0 = Date.UTC(2024, 0, 1);

function connector(venue: string, over: Partial<ConnectorInput> = {}): ConnectorInput {
  return { venue, baseUrl: `https://${venue}.example.com`, rateLimit: { limit: 1200, periodMs: 60_000 }, ...over };
}

function job(venue: string, symbol: string, over: Partial<JobInput> = {}): JobInput {
  return { venue, symbol, type: 'ohlcv', timeframe: '1m', nextRunAt: T0, ...over };
}

/**
 * The behaviour every StateStore adapter must show. Call from an adapter's test file:
 * `describeStoreContract('sqlite', (ns) => openStore(...))`. The budget cases are
 * the budget contract every BudgetsRepo shares (packages/budget/test/budget-contract.ts).
 */
export function describeStoreContract(name: string, open: OpenStoreInNamespace): void {
  describe(`StateStore contract: ${name}`, () => {
    const { openAgain } = storePerTest(open, 'c');
    let store: StateStore;
    beforeEach(async () => {
      store = await openAgain();
    });

    it('pings', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
      expect(['sqlite', 'mongodb']).toContain(store.kind);
    });

    describe('connectors', () => {
      it('creates with defaults and updates the one record on a second upsert', async () => {
        const first = await store.connectors.upsert(connector('binance', { maxInflight: 8 }));
        expect(first).toMatchObject({
          venue: 'binance',
          status: 'active',
          baseUrl: 'https://binance.example.com',
          rateLimit: { policy: 'fixed-window', limit: 1200, periodMs: 60_000, headroom: 0.95 },
          maxInflight: 8,
          freezeMs: 60_000,
          aimd: { increaseAfterMs: 30_000, stableMs: 30_000, restartAfterMs: 60_000 }, // the floor and start are per venue when unset (aimdLimitsFor)
        });
        const second = await store.connectors.upsert(
          connector('binance', { baseUrl: 'https://api.binance.com', rateLimit: { policy: 'gcra', limit: 600, periodMs: 10_000, headroom: 0.9 } }),
        );
        expect(second).toMatchObject({
          baseUrl: 'https://api.binance.com',
          rateLimit: { policy: 'gcra', limit: 600, periodMs: 10_000, headroom: 0.9 },
          // absent on the second upsert: kept, not reset to the default 4
          maxInflight: 8,
        });
        expect(second.createdAt).toBe(first.createdAt);
        const all = await store.connectors.list();
        expect(all.map((c) => c.venue)).toEqual(['binance']);
        expect(await store.connectors.get('binance')).toEqual(second);
      });

      it('gives a new connector the default in-flight cap of its venue and keeps the freeze escalation settings', async () => {
        const polygon = await store.connectors.upsert(connector('polygon'));
        expect(polygon).toMatchObject({ maxInflight: 1, freezeMs: 60_000, freezeMaxMs: 900_000 });
        expect(polygon.freezeResetMs).toBeUndefined();
        const tuned = await store.connectors.upsert(connector('polygon', { freezeMs: 5000, freezeMaxMs: 120_000, freezeResetMs: 30_000 }));
        expect(tuned).toMatchObject({ maxInflight: 1, freezeMs: 5000, freezeMaxMs: 120_000, freezeResetMs: 30_000 });
        // Absent on a later upsert: kept.
        const again = await store.connectors.upsert(connector('polygon', { maxInflight: 3 }));
        expect(again).toMatchObject({ maxInflight: 3, freezeMs: 5000, freezeMaxMs: 120_000, freezeResetMs: 30_000 });
        expect(await store.connectors.get('polygon')).toEqual(again);
      });

      it("keeps a xetra connector's per-market pacing across upserts that do not name one", async () => {
        expect((await store.connectors.upsert(connector('xetra'))).pacing).toBeUndefined();
        expect((await store.connectors.upsert(connector('xetra', { pacing: 'burst' }))).pacing).toBe('burst');
        const again = await store.connectors.upsert(connector('xetra', { maxInflight: 2 }));
        expect(again).toMatchObject({ pacing: 'burst', maxInflight: 2 });
        expect(await store.connectors.get('xetra')).toEqual(again);
        await expect(store.connectors.upsert(connector('binance', { pacing: 'even' }))).rejects.toThrow(/pacing/);
      });

      it("keeps a connector's book loop across upserts that do not name one; null turns it off", async () => {
        expect((await store.connectors.upsert(connector('polymarket'))).bookLoop).toBeUndefined();
        const on = await store.connectors.upsert(connector('polymarket', { bookLoop: { cadenceMs: 1000 } }));
        expect(on.bookLoop).toEqual({ cadenceMs: 1000, shares: 8 });
        expect((await store.connectors.upsert(connector('polymarket', { maxInflight: 3 }))).bookLoop).toEqual({ cadenceMs: 1000, shares: 8 });
        expect((await store.connectors.get('polymarket'))?.bookLoop).toEqual({ cadenceMs: 1000, shares: 8 });
        expect((await store.connectors.upsert(connector('polymarket', { bookLoop: null }))).bookLoop).toBeUndefined();
        expect((await store.connectors.get('polymarket'))?.bookLoop).toBeUndefined();
        await expect(store.connectors.upsert(connector('polymarket', { bookLoop: { cadenceMs: 10 } }))).rejects.toThrow(/bookLoop/);
      });

      it('keeps status across upserts that do not name one', async () => {
        await store.connectors.upsert(connector('kraken'));
        await store.connectors.setStatus('kraken', 'paused');
        const again = await store.connectors.upsert(connector('kraken', { freezeMs: 5000 }));
        expect(again.status).toBe('paused');
        expect(again.freezeMs).toBe(5000);
        const active = await store.connectors.upsert(connector('kraken', { status: 'active' }));
        expect(active.status).toBe('active');
      });

      it('gets, lists in venue order and sets status', async () => {
        await store.connectors.upsert(connector('kraken'));
        await store.connectors.upsert(connector('binance'));
        expect(await store.connectors.get('nope')).toBeNull();
        expect((await store.connectors.list()).map((c) => c.venue)).toEqual(['binance', 'kraken']);
        expect((await store.connectors.setStatus('kraken', 'disabled')).status).toBe('disabled');
        expect((await store.connectors.get('kraken'))?.status).toBe('disabled');
        await expect(store.connectors.setStatus('nope', 'paused')).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.connectors.setStatus('kraken', 'sleeping' as 'paused')).rejects.toMatchObject({ code: 'E_VALIDATION', field: 'status' });
      });

      it('rejects bad input naming the field', async () => {
        await expect(store.connectors.upsert(connector('Bad Venue'))).rejects.toMatchObject({ code: 'E_VALIDATION', field: 'connector.venue' });
        await expect(store.connectors.upsert(connector('binance', { baseUrl: 'ftp://x' }))).rejects.toMatchObject({ field: 'connector.baseUrl' });
        await expect(store.connectors.upsert(connector('binance', { rateLimit: { limit: 0, periodMs: 1000 } }))).rejects.toMatchObject({
          field: 'connector.rateLimit.limit',
        });
        expect(await store.connectors.list()).toEqual([]);
      });
    });

    describe('jobs', () => {
      it('derives the id, fills defaults, and keeps cursor and stats across upserts', async () => {
        const j = await store.jobs.upsert(job('binance', 'BTC/USDT', { priority: 5 }));
        expect(j).toMatchObject({
          id: 'binance:BTC/USDT:1m:ohlcv',
          enabled: true,
          priority: 5,
          nextRunAt: T0,
          lockedUntil: null,
          cursor: null,
          since: null,
          stats: { runs: 0, failures: 0, lastRunAt: null, lastSuccessAt: null, lastErrorAt: null, lastError: null },
        });
        await store.jobs.complete(j.id, { cursor: T0 + 60_000, nextRunAt: T0 + 120_000 });
        const again = await store.jobs.upsert({ venue: 'binance', symbol: 'BTC/USDT', type: 'ohlcv', timeframe: '1m', since: T0 - 1000 });
        expect(again).toMatchObject({ cursor: T0 + 60_000, priority: 5, nextRunAt: T0 + 120_000, since: T0 - 1000, stats: { runs: 1 } });
        const book = await store.jobs.upsert({ venue: 'polymarket', symbol: '123', type: 'book' });
        expect(book.id).toBe('polymarket:123:-:book');
        expect(book.timeframe).toBeNull();
        expect((await store.jobs.list()).map((x) => x.id)).toEqual(['binance:BTC/USDT:1m:ohlcv', 'polymarket:123:-:book']);
      });

      it('lists with filters, enables and disables, removes', async () => {
        await store.jobs.upsert(job('binance', 'BTC/USDT'));
        await store.jobs.upsert(job('binance', 'ETH/USDT', { enabled: false }));
        await store.jobs.upsert(job('kraken', 'BTC/USD', { type: 'trades', timeframe: undefined }));
        expect((await store.jobs.list({ venue: 'binance' })).map((x) => x.symbol)).toEqual(['BTC/USDT', 'ETH/USDT']);
        expect((await store.jobs.list({ enabled: false })).map((x) => x.symbol)).toEqual(['ETH/USDT']);
        expect((await store.jobs.list({ type: 'trades' })).map((x) => x.id)).toEqual(['kraken:BTC/USD:-:trades']);
        expect((await store.jobs.setEnabled('binance:ETH/USDT:1m:ohlcv', true)).enabled).toBe(true);
        expect(await store.jobs.list({ enabled: false })).toEqual([]);
        expect(await store.jobs.remove('binance:ETH/USDT:1m:ohlcv')).toBe(true);
        expect(await store.jobs.remove('binance:ETH/USDT:1m:ohlcv')).toBe(false);
        expect(await store.jobs.get('binance:ETH/USDT:1m:ohlcv')).toBeNull();
        await expect(store.jobs.setEnabled('binance:XRP/USDT:1m:ohlcv', true)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('rejects bad input naming the field', async () => {
        await expect(store.jobs.upsert(job('binance', 'BTC/USDT', { timeframe: '7m' as '1m' }))).rejects.toMatchObject({
          code: 'E_VALIDATION',
          field: 'job.timeframe',
        });
        await expect(store.jobs.upsert(job('binance', 'BTC:USDT'))).rejects.toMatchObject({ field: 'job.symbol' });
        await expect(store.jobs.claimDue(T0, -1, 1000)).rejects.toBeInstanceOf(ValidationError);
        expect(await store.jobs.list()).toEqual([]);
      });

      it('claims only enabled, due, unleased jobs of active connectors', async () => {
        await store.connectors.upsert(connector('binance'));
        await store.connectors.upsert(connector('kraken'));
        await store.connectors.setStatus('kraken', 'paused');
        await store.connectors.upsert(connector('coinbase', { status: 'disabled' }));
        await store.jobs.upsert(job('binance', 'DUE/A'));
        await store.jobs.upsert(job('binance', 'OFF/A', { enabled: false }));
        await store.jobs.upsert(job('binance', 'LATER/A', { nextRunAt: T0 + 30_001 }));
        await store.jobs.upsert(job('kraken', 'PAUSED/A'));
        await store.jobs.upsert(job('coinbase', 'DISABLED/A'));
        await store.jobs.upsert(job('nowhere', 'NOCONNECTOR/A'));

        const claimed = await store.jobs.claimDue(T0, 100, 30_000);
        expect(claimed.map((j) => j.id)).toEqual(['binance:DUE/A:1m:ohlcv']);
        expect(claimed[0]?.lockedUntil).toBe(T0 + 30_000);
        expect((await store.jobs.get('binance:DUE/A:1m:ohlcv'))?.lockedUntil).toBe(T0 + 30_000);
        // leased: not claimed again before the lease ends
        expect(await store.jobs.claimDue(T0 + 29_999, 100, 30_000)).toEqual([]);
        // expired lease: reclaimed; LATER/A only once it is due
        const reclaimed = await store.jobs.claimDue(T0 + 30_000, 100, 30_000);
        expect(reclaimed.map((j) => j.id)).toEqual(['binance:DUE/A:1m:ohlcv']);
        expect((await store.jobs.claimDue(T0 + 30_001, 100, 30_000)).map((j) => j.id)).toEqual(['binance:LATER/A:1m:ohlcv']);
        // the paused venue's job is never claimed, however late
        expect(await store.jobs.claimDue(T0 + 10 * 86_400_000, 100, 1000)).not.toContainEqual(expect.objectContaining({ venue: 'kraken' }));
        // resuming the connector makes its jobs claimable
        await store.connectors.setStatus('kraken', 'active');
        expect((await store.jobs.claimDue(T0 + 20 * 86_400_000, 100, 1000)).map((j) => j.venue)).toContain('kraken');
        expect(await store.jobs.claimDue(T0, 0, 1000)).toEqual([]);
      });

      it('claims by priority, then earliest due, at most max', async () => {
        await store.connectors.upsert(connector('binance'));
        await store.jobs.upsert(job('binance', 'LOW/A', { priority: -5, nextRunAt: T0 - 5000 }));
        await store.jobs.upsert(job('binance', 'HIGH/LATE', { priority: 10, nextRunAt: T0 - 10 }));
        await store.jobs.upsert(job('binance', 'HIGH/EARLY', { priority: 10, nextRunAt: T0 - 20 }));
        await store.jobs.upsert(job('binance', 'MID/A', { priority: 0, nextRunAt: T0 - 1 }));
        const first = await store.jobs.claimDue(T0, 3, 1000);
        expect(first.map((j) => j.symbol)).toEqual(['HIGH/EARLY', 'HIGH/LATE', 'MID/A']);
        const rest = await store.jobs.claimDue(T0, 3, 1000);
        expect(rest.map((j) => j.symbol)).toEqual(['LOW/A']);
      });

      it('never leases one job to two concurrent claimers (same handle and two handles)', async () => {
        await store.connectors.upsert(connector('binance'));
        const other = await openAgain();
        const symbols = Array.from({ length: 60 }, (_, i) => `S${i}/USDT`);
        for (const s of symbols) await store.jobs.upsert(job('binance', s, { priority: s.length % 3 }));
        const batches = await Promise.all([
          store.jobs.claimDue(T0, 7, 60_000),
          other.jobs.claimDue(T0, 7, 60_000),
          store.jobs.claimDue(T0, 7, 60_000),
          other.jobs.claimDue(T0, 7, 60_000),
          store.jobs.claimDue(T0, 7, 60_000),
          other.jobs.claimDue(T0, 7, 60_000),
        ]);
        const ids = batches.flat().map((j) => j.id);
        expect(ids).toHaveLength(42);
        expect(new Set(ids).size).toBe(42);
        const rest = await Promise.all([store.jobs.claimDue(T0, 50, 60_000), other.jobs.claimDue(T0, 50, 60_000)]);
        const all = [...ids, ...rest.flat().map((j) => j.id)];
        expect(all).toHaveLength(60);
        expect(new Set(all).size).toBe(60);
      });

      it('completes: cursor only moves forward, lease released, stats counted', async () => {
        await store.connectors.upsert(connector('binance'));
        const { id } = await store.jobs.upsert(job('binance', 'BTC/USDT'));
        await store.jobs.claimDue(T0, 1, 60_000);
        const done = await store.jobs.complete(id, { cursor: T0 + 600_000, nextRunAt: T0 + 60_000, records: 10 });
        expect(done).toMatchObject({ cursor: T0 + 600_000, nextRunAt: T0 + 60_000, lockedUntil: null, stats: { runs: 1, failures: 0 } });
        expect(done.stats.lastRunAt).toEqual(expect.any(Number));
        expect(done.stats.lastSuccessAt).toBe(done.stats.lastRunAt);
        const back = await store.jobs.complete(id, { cursor: T0, nextRunAt: T0 + 120_000 });
        expect(back).toMatchObject({ cursor: T0 + 600_000, nextRunAt: T0 + 120_000, stats: { runs: 2 } });
        const noCursor = await store.jobs.complete(id, { nextRunAt: T0 + 180_000 });
        expect(noCursor.cursor).toBe(T0 + 600_000);
        expect(await store.jobs.advanceCursor(id, T0 + 60_000)).toBe(T0 + 600_000);
        expect(await store.jobs.advanceCursor(id, T0 + 900_000)).toBe(T0 + 900_000);
        expect((await store.jobs.get(id))?.cursor).toBe(T0 + 900_000);
        await expect(store.jobs.complete('binance:NOPE/USDT:1m:ohlcv', { nextRunAt: T0 })).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.jobs.advanceCursor('binance:NOPE/USDT:1m:ohlcv', 1)).rejects.toBeInstanceOf(NotFoundError);
      });

      it("counts each venue's jobs, its enabled ones and its last run, in venue order", async () => {
        expect(await store.jobs.countsByVenue()).toEqual([]);
        await store.connectors.upsert(connector('binance'));
        await store.connectors.upsert(connector('polygon'));
        const btc = await store.jobs.upsert(job('binance', 'BTC/USDT'));
        const eth = await store.jobs.upsert(job('binance', 'ETH/USDT'));
        await store.jobs.upsert(job('binance', 'SOL/USDT', { enabled: false }));
        await store.jobs.upsert(job('polygon', 'AAPL', { timeframe: '1d' }));
        await store.jobs.complete(btc.id, { nextRunAt: T0 + 60_000 });
        await store.jobs.fail(eth.id, 'HTTP 503 from venue', T0 + 5000);
        const lastRuns = await Promise.all([btc.id, eth.id].map(async (id) => (await store.jobs.get(id))!.stats.lastRunAt!));
        expect(await store.jobs.countsByVenue()).toEqual([
          { venue: 'binance', jobsCount: 3, activeJobsCount: 2, lastJobRunAt: Math.max(...lastRuns) },
          { venue: 'polygon', jobsCount: 1, activeJobsCount: 1, lastJobRunAt: null },
        ]);
        await store.jobs.setEnabled(btc.id, false);
        expect((await store.jobs.countsByVenue())[0]).toMatchObject({ venue: 'binance', jobsCount: 3, activeJobsCount: 1 });
      });

      it('advances a sliced universe job: member cursor within the day, then the day with the member cursor cleared', async () => {
        await store.connectors.upsert(connector('polygon'));
        const { id } = await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: '@megacaps', timeframe: '1d' });
        expect((await store.jobs.get(id))?.memberCursor).toBeNull();
        expect(await store.jobs.advanceMembers(id, { member: 'AMZN' })).toMatchObject({ cursor: null, memberCursor: 'AMZN' });
        // forward only: a re-delivered earlier slice leaves it
        expect(await store.jobs.advanceMembers(id, { member: 'AAPL' })).toMatchObject({ memberCursor: 'AMZN' });
        // an update of the job keeps its progress, like its cursor
        await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: '@megacaps', timeframe: '1d', priority: 5 });
        expect((await store.jobs.get(id))?.memberCursor).toBe('AMZN');
        expect(await store.jobs.advanceMembers(id, { dayCursor: T0 })).toMatchObject({ cursor: T0, memberCursor: null });
        await store.jobs.advanceMembers(id, { member: 'MSFT' });
        // the cursor still only moves forward
        expect(await store.jobs.advanceMembers(id, { dayCursor: T0 - 86_400_000 })).toMatchObject({ cursor: T0, memberCursor: null });
        await expect(store.jobs.advanceMembers('polygon:@gone:1d:ohlcv', { member: 'A' })).rejects.toBeInstanceOf(NotFoundError);
      });

      it('fails: lease released, retry scheduled, failure recorded; release frees a lease', async () => {
        await store.connectors.upsert(connector('binance'));
        const { id } = await store.jobs.upsert(job('binance', 'BTC/USDT'));
        await store.jobs.claimDue(T0, 1, 60_000);
        const failed = await store.jobs.fail(id, 'HTTP 503 from venue', T0 + 5000);
        expect(failed).toMatchObject({ nextRunAt: T0 + 5000, lockedUntil: null, stats: { runs: 1, failures: 1, lastError: 'HTTP 503 from venue' } });
        expect(failed.stats.lastErrorAt).toEqual(expect.any(Number));
        expect(failed.stats.lastSuccessAt).toBeNull();
        expect(await store.jobs.claimDue(T0 + 4999, 1, 60_000)).toEqual([]);
        expect(await store.jobs.claimDue(T0 + 5000, 1, 60_000)).toHaveLength(1);
        await store.jobs.release(id);
        expect((await store.jobs.get(id))?.lockedUntil).toBeNull();
        await store.jobs.claimDue(T0 + 5000, 1, 60_000);
        await store.jobs.release(id, T0 + 9000);
        expect(await store.jobs.get(id)).toMatchObject({ lockedUntil: null, nextRunAt: T0 + 9000 });
        await expect(store.jobs.fail('binance:NOPE/USDT:1m:ohlcv', 'x', T0)).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.jobs.release('binance:NOPE/USDT:1m:ohlcv')).rejects.toBeInstanceOf(NotFoundError);
      });

      it('unit lock: one holder at a time, the job read in the same write, fenced cursor writes, renewal, release and expiry', async () => {
        await store.connectors.upsert(connector('binance'));
        const { id } = await store.jobs.upsert(job('binance', 'BTC/USDT'));
        await store.jobs.advanceCursor(id, T0);
        const other = await openAgain();
        const a = await store.jobs.lockUnit(id, 'token-a', 60_000);
        expect(a).toEqual({ locked: true, job: await store.jobs.get(id) });
        expect(a?.locked && a.job.cursor).toBe(T0);
        // Another connection (another worker) finds it held; the holder may take it again.
        expect(await other.jobs.lockUnit(id, 'token-b', 60_000)).toEqual({ locked: false, heldUntil: expect.any(Number) });
        expect(await store.jobs.lockUnit(id, 'token-a', 60_000)).toMatchObject({ locked: true });
        expect(await store.jobs.renewUnitLock(id, 'token-a', 60_000)).toBe(true);
        expect(await other.jobs.renewUnitLock(id, 'token-b', 60_000)).toBe(false);
        // Writes fenced by a token that does not hold the lock change nothing.
        await expect(other.jobs.advanceCursor(id, T0 + 60_000, 'token-b')).rejects.toBeInstanceOf(JobLockLostError);
        await expect(other.jobs.complete(id, { cursor: T0 + 60_000, nextRunAt: T0, unitToken: 'token-b' })).rejects.toBeInstanceOf(JobLockLostError);
        expect(await store.jobs.get(id)).toMatchObject({ cursor: T0, stats: { runs: 0 } });
        expect(await store.jobs.advanceCursor(id, T0 + 60_000, 'token-a')).toBe(T0 + 60_000);
        // The holder's completion frees the lock in the same write.
        expect(await store.jobs.complete(id, { cursor: T0 + 120_000, nextRunAt: T0, unitToken: 'token-a' })).toMatchObject({ cursor: T0 + 120_000 });
        expect(await other.jobs.lockUnit(id, 'token-b', 60_000)).toMatchObject({ locked: true, job: { cursor: T0 + 120_000, stats: { runs: 1 } } });
        // Release frees it only for its holder.
        await store.jobs.releaseUnitLock(id, 'token-a');
        expect(await store.jobs.lockUnit(id, 'token-c', 60_000)).toMatchObject({ locked: false });
        await other.jobs.releaseUnitLock(id, 'token-b');
        // An expired lock is free for the next unit, and its old holder is fenced out.
        expect(await store.jobs.lockUnit(id, 'token-c', 50)).toMatchObject({ locked: true });
        await new Promise((r) => setTimeout(r, 120));
        expect(await other.jobs.lockUnit(id, 'token-d', 60_000)).toMatchObject({ locked: true });
        await expect(store.jobs.complete(id, { nextRunAt: T0, unitToken: 'token-c' })).rejects.toBeInstanceOf(JobLockLostError);
        expect(await store.jobs.lockUnit('binance:NOPE/USDT:1m:ohlcv', 'token-a', 60_000)).toBeNull();
        await expect(store.jobs.complete('binance:NOPE/USDT:1m:ohlcv', { nextRunAt: T0, unitToken: 'token-a' })).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.jobs.lockUnit(id, 'token-a', 0)).rejects.toBeInstanceOf(ValidationError);
      });

      it('hands each claimed job’s unit lock to the run it leases, and a release frees it', async () => {
        await store.connectors.upsert(connector('binance'));
        // The handed lock lasts as long as the lease, on the store's clock: due times around now.
        const now = Date.now();
        const { id } = await store.jobs.upsert(job('binance', 'XRP/USDT', { nextRunAt: now - 1000 }));
        const other = await openAgain();
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        expect(await other.jobs.lockUnit(id, 'somebody-else', 60_000)).toMatchObject({ locked: false });
        const handed = await other.jobs.lockUnit(id, dueUnitToken(now - 1000), 60_000);
        expect(handed).toEqual({ locked: true, job: await store.jobs.get(id) });
        await store.jobs.complete(id, { nextRunAt: now - 500, unitToken: dueUnitToken(now - 1000) });
        // The next claim hands it to the next run; a release of that claim (the run was not queued) frees it.
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        expect(await other.jobs.lockUnit(id, dueUnitToken(now - 1000), 60_000)).toMatchObject({ locked: false });
        await store.jobs.release(id, now - 200);
        expect(await other.jobs.lockUnit(id, 'somebody-else', 60_000)).toMatchObject({ locked: true });
        // A claim while a unit holds the lock unexpired leaves it with that unit.
        await store.jobs.claimDue(now, 10, 60_000);
        expect(await other.jobs.lockUnit(id, dueUnitToken(now - 200), 60_000)).toMatchObject({ locked: false });
        expect(await other.jobs.lockUnit(id, 'somebody-else', 60_000)).toMatchObject({ locked: true });
        // Completing or failing a run frees the lock its claim handed over when no unit took it (another job of a per-day unit).
        await other.jobs.releaseUnitLock(id, 'somebody-else');
        await store.jobs.release(id, now - 150);
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        await store.jobs.complete(id, { nextRunAt: now - 100 });
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        expect(await other.jobs.lockUnit(id, dueUnitToken(now - 100), 60_000)).toMatchObject({ locked: true });
        await other.jobs.releaseUnitLock(id, dueUnitToken(now - 100));
        await store.jobs.release(id, now - 50);
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        await store.jobs.fail(id, 'venue said no', now - 20);
        expect(await store.jobs.claimDue(now, 10, 60_000)).toHaveLength(1);
        expect(await other.jobs.lockUnit(id, dueUnitToken(now - 20), 60_000)).toMatchObject({ locked: true });
        await other.jobs.releaseUnitLock(id, dueUnitToken(now - 20));
        // A handed lock lasts no longer than the lease (at most UNIT_LOCK_TTL_MS): a unit with another token gets it after.
        // The lease is long enough for the check right after the claim to fall inside it on a loaded machine.
        await store.jobs.release(id, Date.now() - 100);
        const leaseMs = 1000;
        const claimedAt = Date.now();
        expect(await store.jobs.claimDue(claimedAt, 10, leaseMs)).toHaveLength(1);
        expect(await other.jobs.lockUnit(id, 'queued-elsewhere', 60_000)).toMatchObject({ locked: false });
        expect((await store.jobs.get(id))?.lockedUntil).toBe(claimedAt + leaseMs);
        await new Promise((r) => setTimeout(r, claimedAt + leaseMs - Date.now() + 50));
        expect(await other.jobs.lockUnit(id, 'queued-elsewhere', 60_000)).toMatchObject({ locked: true });
      });

      it('records who took each lease, counts unended leases per venue and holder, and ends one holder’s leases only', async () => {
        await store.connectors.upsert(connector('binance'));
        await store.connectors.upsert(connector('kraken'));
        // Due times around now: the unit lock a claim hands over expires on the store's clock.
        const now = Date.now();
        const ids = [];
        for (const [venue, symbol] of [
          ['binance', 'A/USDT'],
          ['binance', 'B/USDT'],
          ['kraken', 'C/USD'],
          ['kraken', 'D/USD'],
        ] as const) {
          ids.push((await store.jobs.upsert(job(venue, symbol, { nextRunAt: now - 1000 }))).id);
        }
        const [a, b, c, d] = ids as [string, string, string, string];
        expect(await store.jobs.leases(now)).toEqual([]);
        expect((await store.jobs.claimDue(now, 2, 60_000, 'epoch-1/sched-a')).map((j) => j.id)).toEqual([a, b]);
        expect((await store.jobs.claimDue(now + 1000, 1, 30_000, 'epoch-2/sched-b')).map((j) => j.id)).toEqual([c]);
        // A claim naming no holder (an older scheduler) is counted apart.
        expect((await store.jobs.claimDue(now + 2000, 1, 10_000)).map((j) => j.id)).toEqual([d]);
        const other = await openAgain();
        expect(await other.jobs.leases(now + 2000)).toEqual([
          { venue: 'binance', holder: 'epoch-1/sched-a', jobs: 2, untilMs: now + 60_000 },
          { venue: 'kraken', holder: null, jobs: 1, untilMs: now + 12_000 },
          { venue: 'kraken', holder: 'epoch-2/sched-b', jobs: 1, untilMs: now + 31_000 },
        ]);
        // A lease that has ended is not counted.
        expect(await store.jobs.leases(now + 31_000)).toEqual([{ venue: 'binance', holder: 'epoch-1/sched-a', jobs: 2, untilMs: now + 60_000 }]);

        // A's run has started: its unit took the lock the claim handed over.
        expect(await other.jobs.lockUnit(a, dueUnitToken(now - 1000), 60_000)).toMatchObject({ locked: true });
        expect(await store.jobs.releaseLeases('epoch-1/sched-a')).toBe(2);
        expect(await store.jobs.releaseLeases('epoch-1/sched-a')).toBe(0);
        expect(await store.jobs.releaseLeases('nobody')).toBe(0);
        // Ended: claimable at once, the due time unchanged; the other holders' leases stay.
        expect(await store.jobs.get(a)).toMatchObject({ lockedUntil: null, nextRunAt: now - 1000 });
        expect((await store.jobs.get(c))?.lockedUntil).toBe(now + 31_000);
        expect((await store.jobs.get(d))?.lockedUntil).toBe(now + 12_000);
        // The unit under way keeps its lock: no second run of the job can start.
        expect(await other.jobs.lockUnit(a, 'another-unit', 60_000)).toMatchObject({ locked: false });
        expect(await store.jobs.renewUnitLock(a, dueUnitToken(now - 1000), 60_000)).toBe(true);
        // Claimed again (by the next leader), the job keeps that lock and its due time: the same unit id.
        const again = await store.jobs.claimDue(now + 3000, 10, 60_000, 'epoch-1/sched-c');
        expect(again.map((j) => [j.id, j.nextRunAt])).toEqual([
          [a, now - 1000],
          [b, now - 1000],
        ]);
        expect(await other.jobs.lockUnit(a, 'another-unit', 60_000)).toMatchObject({ locked: false });
        expect(await store.jobs.leases(now + 3000)).toEqual([
          { venue: 'binance', holder: 'epoch-1/sched-c', jobs: 2, untilMs: now + 63_000 },
          { venue: 'kraken', holder: null, jobs: 1, untilMs: now + 12_000 },
          { venue: 'kraken', holder: 'epoch-2/sched-b', jobs: 1, untilMs: now + 31_000 },
        ]);
        // A completed run ends its lease: the holder no longer counts it.
        await store.jobs.complete(b, { nextRunAt: now + 60_000 });
        expect(await store.jobs.releaseLeases('epoch-1/sched-c')).toBe(1);
      });

      it('never gives one unit lock to two concurrent callers (same handle and two handles)', async () => {
        await store.connectors.upsert(connector('binance'));
        const { id } = await store.jobs.upsert(job('binance', 'ETH/USDT'));
        const other = await openAgain();
        const tries = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).jobs.lockUnit(id, `token-${i}`, 60_000)));
        expect(tries.filter((t) => t?.locked)).toHaveLength(1);
      });

      it('keeps the cursor across closing and reopening the store', async () => {
        await store.connectors.upsert(connector('binance'));
        const { id } = await store.jobs.upsert(job('binance', 'BTC/USDT'));
        await store.jobs.complete(id, { cursor: T0 + 3_600_000, nextRunAt: T0 + 60_000 });
        await store.close();
        const reopened = await openAgain();
        expect(await reopened.jobs.get(id)).toMatchObject({ cursor: T0 + 3_600_000, stats: { runs: 1 } });
        expect(await reopened.connectors.get('binance')).not.toBeNull();
        expect(await reopened.jobs.advanceCursor(id, T0)).toBe(T0 + 3_600_000);
      });
    });

    describe('budgets', () => budgetContractCases(() => store));

    describe('backfills', () => {
      const M = 60_000;
      /** `n` adjacent chunks of 10 minutes from T0. */
      const chunksOf = (n: number) => Array.from({ length: n }, (_, i) => ({ fromMs: T0 + i * 10 * M, toMs: T0 + (i + 1) * 10 * M }));

      it('creates idempotently with its chunks, filters and sets status', async () => {
        const jobIdA = 'binance:BTC/USDT:1m:ohlcv';
        const chunks = chunksOf(3);
        const b = await store.backfills.create({ id: 'bf-1', jobId: jobIdA, fromMs: T0, toMs: T0 + 30 * M, chunks });
        expect(b).toMatchObject({ id: 'bf-1', jobId: jobIdA, unitsTotal: 3, unitsDone: 0, unitsFailed: 0, status: 'pending' });
        expect((await store.backfills.chunks('bf-1')).map((c) => [c.index, c.fromMs, c.toMs, c.status, c.error])).toEqual(
          chunks.map((c, i) => [i, c.fromMs, c.toMs, 'pending', null]),
        );
        expect(await store.backfills.chunkDone('bf-1', chunks[0]!)).toMatchObject({ unitsDone: 1, status: 'running' });
        const again = await store.backfills.create({ id: 'bf-1', jobId: jobIdA, fromMs: T0, toMs: T0 + 30 * M, chunks });
        expect(again).toMatchObject({ unitsDone: 1, status: 'running' });
        expect((await store.backfills.chunks('bf-1', { status: 'done' })).map((c) => c.fromMs)).toEqual([T0]);
        await store.backfills.create({ id: 'bf-2', jobId: 'kraken:BTC/USD:1m:ohlcv', fromMs: T0, toMs: T0 + 20 * M, chunks: chunksOf(2) });
        expect((await store.backfills.setStatus('bf-2', 'cancelled')).status).toBe('cancelled');
        expect(await store.backfills.chunkDone('bf-2', chunksOf(2)[0]!)).toMatchObject({ unitsDone: 1, status: 'cancelled' });
        expect((await store.backfills.list()).map((x) => x.id)).toEqual(['bf-1', 'bf-2']);
        expect((await store.backfills.list({ jobId: jobIdA })).map((x) => x.id)).toEqual(['bf-1']);
        expect((await store.backfills.list({ status: 'cancelled' })).map((x) => x.id)).toEqual(['bf-2']);
        expect(await store.backfills.get('bf-9')).toBeNull();
        await expect(store.backfills.chunkDone('bf-9', chunks[0]!)).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.backfills.chunkFailed('bf-9', chunks[0]!, 'x')).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.backfills.setStatus('bf-9', 'done')).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.backfills.create({ id: 'bf-3', jobId: jobIdA, fromMs: T0, toMs: T0, chunks: [{ fromMs: T0, toMs: T0 + M }] })).rejects.toMatchObject(
          {
            code: 'E_VALIDATION',
            field: 'backfill.toMs',
          },
        );
        await expect(store.backfills.create({ id: 'bf-4', jobId: jobIdA, fromMs: T0, toMs: T0 + M, chunks: [] })).rejects.toMatchObject({
          code: 'E_VALIDATION',
          field: 'backfill.chunks',
        });
        await expect(
          store.backfills.create({ id: 'bf-5', jobId: jobIdA, fromMs: T0, toMs: T0 + M, chunks: [{ fromMs: T0, toMs: T0 + 2 * M }] }),
        ).rejects.toMatchObject({
          code: 'E_VALIDATION',
          field: 'backfill.chunks',
        });
        expect(await store.backfills.get('bf-4')).toBeNull();
      });

      it('counts a chunk once however often its unit runs: done only when every chunk is done', async () => {
        const chunks = chunksOf(2);
        await store.backfills.create({ id: 'bf-r', jobId: 'binance:BTC/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 20 * M, chunks });
        // The first chunk's unit runs twice (BullMQ redelivery): still 1 of 2.
        await store.backfills.chunkDone('bf-r', chunks[0]!);
        expect(await store.backfills.chunkDone('bf-r', chunks[0]!)).toMatchObject({ unitsDone: 1, status: 'running' });
        expect(await store.backfills.chunkDone('bf-r', chunks[1]!)).toMatchObject({ unitsDone: 2, unitsFailed: 0, status: 'done' });
        expect(await store.backfills.chunkDone('bf-r', chunks[1]!)).toMatchObject({ unitsDone: 2, status: 'done' });
      });

      it('fails a backfill with the reasons per chunk once every chunk has ended; done wins over a late failure', async () => {
        const chunks = chunksOf(3);
        await store.backfills.create({ id: 'bf-f', jobId: 'binance:NOPE/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 30 * M, chunks });
        expect(await store.backfills.chunkFailed('bf-f', chunks[0]!, 'HTTP 400: Invalid symbol')).toMatchObject({ unitsFailed: 1, status: 'running' });
        await store.backfills.chunkDone('bf-f', chunks[1]!);
        // A failure reported after the chunk was stored does not undo it.
        expect(await store.backfills.chunkFailed('bf-f', chunks[1]!, 'late')).toMatchObject({ unitsDone: 1, unitsFailed: 1, status: 'running' });
        const ended = await store.backfills.chunkFailed('bf-f', chunks[2]!, 'out of attempts: HTTP 503');
        expect(ended).toMatchObject({ unitsDone: 1, unitsFailed: 2, status: 'failed' });
        expect((await store.backfills.chunks('bf-f', { status: 'failed' })).map((c) => [c.fromMs, c.error])).toEqual([
          [chunks[0]!.fromMs, 'HTTP 400: Invalid symbol'],
          [chunks[2]!.fromMs, 'out of attempts: HTTP 503'],
        ]);
        // A chunk that is stored after all (a re-run unit) turns the failure into done.
        await store.backfills.chunkDone('bf-f', chunks[0]!);
        expect(await store.backfills.chunkDone('bf-f', chunks[2]!)).toMatchObject({ unitsDone: 3, unitsFailed: 0, status: 'done' });
      });

      it('lists owed chunks of pending and running backfills only, in keyset pages', async () => {
        await store.backfills.create({ id: 'bf-a', jobId: 'binance:BTC/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 30 * M, chunks: chunksOf(3) });
        await store.backfills.create({ id: 'bf-b', jobId: 'binance:ETH/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 20 * M, chunks: chunksOf(2) });
        await store.backfills.create({ id: 'bf-x', jobId: 'binance:SOL/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 20 * M, chunks: chunksOf(2) });
        await store.backfills.setStatus('bf-x', 'cancelled');
        await store.backfills.chunkDone('bf-a', chunksOf(3)[1]!);
        await store.backfills.chunkFailed('bf-b', chunksOf(2)[0]!, 'boom');
        const all = await store.backfills.owedChunks({ limit: 100 });
        expect(all.map((c) => [c.backfillId, c.jobId, c.fromMs, c.toMs, c.index])).toEqual([
          ['bf-a', 'binance:BTC/USDT:1m:ohlcv', T0, T0 + 10 * M, 0],
          ['bf-a', 'binance:BTC/USDT:1m:ohlcv', T0 + 20 * M, T0 + 30 * M, 2],
          ['bf-b', 'binance:ETH/USDT:1m:ohlcv', T0 + 10 * M, T0 + 20 * M, 1],
        ]);
        const page1 = await store.backfills.owedChunks({ limit: 2 });
        const page2 = await store.backfills.owedChunks({ limit: 2, after: { backfillId: page1[1]!.backfillId, fromMs: page1[1]!.fromMs } });
        expect([...page1, ...page2]).toEqual(all);
        // Only backfills created by `createdBefore` (the repair's grace leaves newer ones to their creator).
        expect(await store.backfills.owedChunks({ limit: 100, createdBefore: Date.now() + 60_000 })).toEqual(all);
        expect(await store.backfills.owedChunks({ limit: 100, createdBefore: Date.now() - 60_000 })).toEqual([]);
      });

      it('merges what the backfills of a job asked for, without the withdrawn chunks of a cancelled one', async () => {
        const id = 'binance:BTC/USDT:1m:ohlcv';
        const at = (from: number, to: number) => ({ fromMs: T0 + from * M, toMs: T0 + to * M });
        expect(await store.backfills.requestedRanges(id)).toEqual([]);
        // Two islands, the second made of two backfills that touch.
        await store.backfills.create({ id: 'bf-i1', jobId: id, fromMs: T0, toMs: T0 + 20 * M, chunks: [at(0, 10), at(10, 20)] });
        await store.backfills.create({ id: 'bf-i2', jobId: id, fromMs: T0 + 60 * M, toMs: T0 + 70 * M, chunks: [at(60, 70)] });
        await store.backfills.create({ id: 'bf-i3', jobId: id, fromMs: T0 + 70 * M, toMs: T0 + 80 * M, chunks: [at(70, 80)] });
        // A backfill --gaps over two disjoint holes asks for its chunks, not the span between them.
        await store.backfills.create({ id: 'bf-g', jobId: id, fromMs: T0 + 100 * M, toMs: T0 + 140 * M, chunks: [at(100, 101), at(139, 140)] });
        // Cancelled after one chunk: the chunk fetched counts, the withdrawn ones do not (failed ones do).
        await store.backfills.create({ id: 'bf-c', jobId: id, fromMs: T0 + 200 * M, toMs: T0 + 230 * M, chunks: [at(200, 210), at(210, 220), at(220, 230)] });
        await store.backfills.chunkDone('bf-c', at(200, 210));
        await store.backfills.chunkFailed('bf-c', at(220, 230), 'HTTP 503');
        await store.backfills.setStatus('bf-c', 'cancelled');
        await store.backfills.create({ id: 'bf-o', jobId: 'binance:ETH/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 500 * M, chunks: [at(0, 500)] });
        expect(await store.backfills.requestedRanges(id)).toEqual([at(0, 20), at(60, 80), at(100, 101), at(139, 140), at(200, 210), at(220, 230)]);
      });

      it('counts concurrent chunk reports from two connections exactly', async () => {
        const chunks = chunksOf(40);
        await store.backfills.create({ id: 'bf-c', jobId: 'binance:BTC/USDT:1m:ohlcv', fromMs: T0, toMs: T0 + 400 * M, chunks });
        const other = await openAgain();
        // Every chunk reported twice, once by each connection.
        await Promise.all(chunks.flatMap((c) => [store.backfills.chunkDone('bf-c', c), other.backfills.chunkDone('bf-c', c)]));
        expect(await store.backfills.get('bf-c')).toMatchObject({ unitsDone: 40, status: 'done' });
      });
    });

    describe('gap ledger', () => {
      it('records once per range, lists, fills inside a range, counts attempts, reopens', async () => {
        const a = 'binance:BTC/USDT:1m:ohlcv';
        const g = await store.gaps.record({ jobId: a, fromMs: T0, toMs: T0 + 300_000 }, T0 + 1);
        expect(g).toEqual({ jobId: a, fromMs: T0, toMs: T0 + 300_000, kind: 'missing', detectedAt: T0 + 1, filledAt: null, attempts: 0 });
        const again = await store.gaps.record({ jobId: a, fromMs: T0, toMs: T0 + 300_000, kind: 'venue-hole' }, T0 + 2);
        expect(again).toMatchObject({ kind: 'venue-hole', detectedAt: T0 + 1 });
        await store.gaps.record({ jobId: a, fromMs: T0 + 600_000, toMs: T0 + 660_000 }, T0 + 3);
        await store.gaps.record({ jobId: a, fromMs: T0 + 900_000, toMs: T0 + 960_000 }, T0 + 4);
        await store.gaps.record({ jobId: 'kraken:BTC/USD:1m:ohlcv', fromMs: T0, toMs: T0 + 60_000 }, T0 + 5);
        expect(await store.gaps.list()).toHaveLength(4);
        expect((await store.gaps.list({ jobId: a })).map((x) => x.fromMs)).toEqual([T0, T0 + 600_000, T0 + 900_000]);
        expect((await store.gaps.list({ kind: 'venue-hole' })).map((x) => x.fromMs)).toEqual([T0]);

        await store.gaps.attempt(a, T0, T0 + 300_000);
        await store.gaps.attempt(a, T0, T0 + 300_000);
        // fills the gaps lying inside [T0, T0 + 700_000) only
        expect(await store.gaps.markFilled(a, T0, T0 + 700_000, T0 + 10)).toBe(2);
        expect(await store.gaps.markFilled(a, T0, T0 + 700_000, T0 + 11)).toBe(0);
        const open = await store.gaps.list({ jobId: a, open: true });
        expect(open.map((x) => x.fromMs)).toEqual([T0 + 900_000]);
        const closed = await store.gaps.list({ jobId: a, open: false });
        expect(closed.map((x) => [x.fromMs, x.filledAt, x.attempts])).toEqual([
          [T0, T0 + 10, 2],
          [T0 + 600_000, T0 + 10, 0],
        ]);
        const reopened = await store.gaps.record({ jobId: a, fromMs: T0 + 600_000, toMs: T0 + 660_000 }, T0 + 20);
        expect(reopened).toMatchObject({ filledAt: null, detectedAt: T0 + 3 });
        await expect(store.gaps.record({ jobId: a, fromMs: T0, toMs: T0 - 1 }, T0)).rejects.toMatchObject({ field: 'gap.toMs' });
      });

      it('removes one record exactly', async () => {
        const a = 'binance:BTC/USDT:1m:ohlcv';
        await store.gaps.record({ jobId: a, fromMs: T0, toMs: T0 + 300_000 }, T0 + 1);
        await store.gaps.record({ jobId: a, fromMs: T0, toMs: T0 + 60_000 }, T0 + 2);
        await store.gaps.record({ jobId: 'kraken:BTC/USD:1m:ohlcv', fromMs: T0, toMs: T0 + 300_000 }, T0 + 3);
        expect(await store.gaps.remove(a, T0, T0 + 300_000)).toBe(true);
        expect(await store.gaps.remove(a, T0, T0 + 300_000)).toBe(false);
        expect((await store.gaps.list()).map((g) => [g.jobId, g.toMs - T0])).toEqual([
          [a, 60_000],
          ['kraken:BTC/USD:1m:ohlcv', 300_000],
        ]);
      });
    });

    describe('universes', () => {
      it('sets, replaces, lists per venue, resolves members, removes', async () => {
        const first = await store.universes.set('finnhub', 'megacaps', ['AAPL', ' MSFT', 'AAPL', 'BRK.B']);
        // Trimmed, duplicates dropped, order kept.
        expect(first).toMatchObject({ venue: 'finnhub', name: 'megacaps', symbols: ['AAPL', 'MSFT', 'BRK.B'] });
        await store.universes.set('alpaca', 'megacaps', ['NVDA']);
        const replaced = await store.universes.set('finnhub', 'megacaps', ['TSLA', 'AAPL']);
        expect(replaced.createdAt).toBe(first.createdAt);
        // A second connection sees the new members: units resolve them when they run.
        expect(await (await openAgain()).universes.members('finnhub', 'megacaps')).toEqual(['TSLA', 'AAPL']);
        expect((await store.universes.list()).map((u) => `${u.venue}/${u.name}`)).toEqual(['alpaca/megacaps', 'finnhub/megacaps']);
        expect((await store.universes.list('alpaca')).map((u) => u.symbols)).toEqual([['NVDA']]);
        expect(await store.universes.remove('finnhub', 'megacaps')).toBe(true);
        expect(await store.universes.remove('finnhub', 'megacaps')).toBe(false);
        expect(await store.universes.get('finnhub', 'megacaps')).toBeNull();
        const missing = await store.universes.members('finnhub', 'megacaps').catch((e: unknown) => e);
        expect(missing).toBeInstanceOf(NotFoundError);
        expect((missing as Error).message).toContain('finnhub/megacaps');
      });

      it('refuses bad names, bad symbols, empty lists and lists over the bound', async () => {
        await expect(store.universes.set('finnhub', 'Bad Name', ['AAPL'])).rejects.toMatchObject({ field: 'universe name' });
        await expect(store.universes.set('finnhub', 'ok', ['AAPL', '../etc'])).rejects.toMatchObject({ field: 'symbols[1]', received: '../etc' });
        await expect(store.universes.set('finnhub', 'ok', [])).rejects.toBeInstanceOf(ValidationError);
        const tooMany = Array.from({ length: MAX_UNIVERSE_SYMBOLS + 1 }, (_, i) => `S${i}`);
        await expect(store.universes.set('finnhub', 'ok', tooMany)).rejects.toMatchObject({ field: 'symbols' });
        expect(await store.universes.list()).toEqual([]);
      });
    });
  });
}
