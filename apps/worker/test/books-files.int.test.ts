import { alignDown, jobId } from '@tickfleet/core';
import { DEFAULT_SEED, marketTokenIds, polymarketMarkets, tradesInFile, xetraFileName } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import { jitteredBackoffMs } from '@tickfleet/budget';

const DAY = 86_400_000;

/**
 * The unit kinds beyond candles, with a scheduler and a worker: Polymarket discovery (slow path)
 * creates one book job per listed token and polling (fast path) snapshots each; an instrument
 * whose snapshots fail backs off exponentially on its own while the others keep polling. Xetra's
 * daily post-trade files are listed, downloaded (paced) and parsed into trades, the cursor
 * following the files. The worker's per-venue heartbeat line carries its counters.
 */
describe('fleet: order-book polling and daily files', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { polymarket: { markets: 3 } } });
  });
  afterAll(() => fleet.stop());

  it('discovers instruments, polls their books with per-instrument backoff, and collects a day of Xetra files', async () => {
    await fleet.upsertConnector('polymarket', '--limit', '100000', '--period', '10s');
    await fleet.upsertConnector('xetra', '--limit', '5', '--period', '2s', '--headroom', '1', '--max-inflight', '1');
    await fleet.ok('jobs', 'add', 'polymarket', 'discovery', 'markets');
    // A token the venue does not know: its snapshots fail (404) and only it backs off.
    await fleet.ok('jobs', 'add', 'polymarket', 'book', '999999');
    // Not due before tomorrow: the test enqueues its daily-files unit itself, for a day the venue lists.
    const files = await fleet.withStore((s) => s.jobs.upsert({ venue: 'xetra', type: 'files', symbol: 'DETR', nextRunAt: Date.now() + DAY }));

    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '250', TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '1000' });
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    const tokens = polymarketMarkets(DEFAULT_SEED, 3).flatMap(marketTokenIds);
    expect(tokens).toHaveLength(6);
    const bookJobs = tokens.map((t) => jobId({ venue: 'polymarket', type: 'book', symbol: t }));
    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          const jobs = await Promise.all(bookJobs.map((id) => store.jobs.get(id)));
          return jobs.every((j) => j?.enabled && j.stats.runs >= 2);
        }),
      'every discovered instrument polled twice',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    const books = await fleet.withSink((sink) => sink.reader!.countEnvelopes({ venue: 'polymarket', channel: 'book' }));
    expect(books).toBeGreaterThanOrEqual(12);

    const bad = await fleet.withStore((s) => s.jobs.get('polymarket:999999:-:book'));
    expect(bad!.stats.failures).toBeGreaterThanOrEqual(1);
    expect(bad!.stats.lastError).toMatch(/No orderbook exists/);
    // Backed off rather than polled every second like the others: after its n-th failure in a row
    // it is due base * 2^(n-1) (base 5 s) plus its hash jitter after the failure, however long the
    // test took to get here. The store stamps lastErrorAt a moment after the worker computed the
    // retry time, so the gap is at most that delay; the lower bound leaves the moment room.
    const failures = bad!.stats.failures;
    const delayMs = Math.min(300_000, 5000 * 2 ** (failures - 1));
    expect(bad!.nextRunAt - bad!.stats.lastErrorAt!).toBeLessThanOrEqual(jitteredBackoffMs(bad!.id, delayMs));
    expect(bad!.nextRunAt - bad!.stats.lastErrorAt!).toBeGreaterThanOrEqual(delayMs / 2);

    // Daily files: the half of the UTC day (today or yesterday) that the venue still lists fully.
    const now = Date.now();
    const dayMs = now - alignDown(now, '1d') >= 12 * 3_600_000 ? alignDown(now, '1d') : alignDown(now, '1d') - DAY;
    await fleet.enqueue([{ kind: 'daily-files', venue: 'xetra', jobId: files.id, fromMs: dayMs, toMs: dayMs + DAY, dueAt: now, enqueuedAt: now }]);
    const cursor = await waitFor(
      () =>
        fleet.withStore(async (s) => {
          const c = (await s.jobs.get(files.id))?.cursor ?? null;
          return c !== null && c > dayMs ? c : undefined;
        }),
      'xetra cursor past a few files',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    const stored = await fleet.withSink(async (sink) => {
      const ids: string[] = [];
      for await (const e of sink.reader!.streamEnvelopes({ venue: 'xetra', channel: 'trades' })) ids.push(String(e.envelope.payload.tradeId));
      return new Set(ids);
    });
    // Every trade of the file at the cursor is stored, none twice.
    const atCursor = (tradesInFile(xetraFileName('DETR', cursor), DEFAULT_SEED) ?? []).map((t) => t.transIdCode);
    expect(atCursor.length).toBeGreaterThan(0);
    for (const id of atCursor) expect(stored.has(id)).toBe(true);
    // The unit listed and downloaded only its own market (one listing, not one per market).
    expect(Object.keys((await fleet.mockStats('xetra')).scopes ?? {})).toEqual(['DETR']);

    // Heartbeat lines (every 5 s in tests) carry the per-venue counters.
    await waitFor(() => /"venue":"polymarket".*"msg":"venue heartbeat"/.test(worker.output()), 'a polymarket heartbeat line', { timeoutMs: 60_000 });
    const beat = JSON.parse(
      worker
        .output()
        .split('\n')
        .filter((l) => l.includes('"venue":"polymarket"') && l.includes('venue heartbeat'))
        .pop()!,
    ) as Record<string, unknown>;
    for (const field of ['inflight', 'cap', 'submitted', 'ok', 'rateLimited', 'errors', 'freezeRemaining', 'budgetRemaining'])
      expect(beat).toHaveProperty(field);
    expect(Number(beat.ok)).toBeGreaterThan(0);
    expect(Number(beat.errors)).toBeGreaterThan(0);

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 400_000);
});
