import { jobId } from '@tickfleet/core';
import { DEFAULT_SEED, limitlessBookSlugs, limitlessMarkets } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

/**
 * Limitless through the same runner as Polymarket, with a real scheduler and worker process:
 * discovery pages `/markets/active` and creates one book job per order-book slug (AMM markets have
 * none), polling stores each slug's snapshots in the SQLite sink. Every book the emulation served
 * is stored once. The connector follows the venue's documented limit (at most 2 concurrent, at
 * least 300 ms between calls), as the demo's does: the emulation enforces it and refuses nothing.
 */
describe('fleet: Limitless discovery and order-book polling', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    // 6 top-level markets: 3 CLOB singles, 1 AMM, 1 CLOB single, 1 group of 2 -> 6 book slugs
    fleet = await FleetHarness.start({ venues: { limitless: { markets: 6 } } });
  });
  afterAll(() => fleet.stop());

  it('discovers the order-book markets, polls each, and stores exactly the books the venue served', async () => {
    // Paced wider than the default's 400 ms: a starved machine can delay one grant's request by
    // more than the default's 100 ms margin over the venue's 300 ms, and this test is about polling.
    await fleet.upsertConnector('limitless', '--limit', '1', '--period', '700ms', '--policy', 'gcra', '--headroom', '1', '--max-inflight', '2');
    await fleet.ok('jobs', 'add', 'limitless', 'discovery', 'markets');
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '250', TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '1000' });
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    const slugs = limitlessBookSlugs(limitlessMarkets(DEFAULT_SEED, 6));
    expect(slugs).toHaveLength(6);
    const bookJobs = slugs.map((s) => jobId({ venue: 'limitless', type: 'book', symbol: s }));
    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          const jobs = await Promise.all(bookJobs.map((id) => store.jobs.get(id)));
          return jobs.every((j) => j?.enabled && j.stats.runs - j.stats.failures >= 2);
        }),
      'every discovered Limitless market polled twice',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(await fleet.withStore((s) => s.jobs.list({ venue: 'limitless', type: 'book' }))).toHaveLength(6);

    // No new units once the scheduler is gone: the worker finishes what it holds, then the
    // sink must hold one book per order-book answer (every other 2xx was a one-page discovery).
    await fleet.stopCleanly(scheduler);
    const storedBooks = () => fleet.withSink((sink) => sink.reader!.countEnvelopes({ venue: 'limitless', channel: 'book' }));
    const settled = await waitFor(
      async () => {
        const stats = await fleet.mockStats('limitless');
        const discovery = await fleet.withStore((s) => s.jobs.get(jobId({ venue: 'limitless', type: 'discovery', symbol: 'markets' })));
        const discoveries = discovery!.stats.runs - discovery!.stats.failures;
        const books = await storedBooks();
        return books > 0 && books === stats.responses2xx - discoveries ? { stats, books, discoveries } : undefined;
      },
      'stored Limitless books = order books the emulation served',
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    console.log(
      `limitless: ${settled.books} books stored, ${settled.stats.responses2xx} 2xx served (${settled.discoveries} discovery pages), ${settled.stats.requests} requests`,
    );
    expect(settled.discoveries).toBeGreaterThanOrEqual(1);
    expect(settled.books).toBeGreaterThanOrEqual(12);
    expect(settled.stats).toMatchObject({ overLimitRequests: 0, responses429: 0, responses4xx: 0, responses5xx: 0 });
    expect(settled.stats.extra).toMatchObject({ maxConcurrent: 2, concurrencyRejected: 0 });
    expect(settled.stats.extra!.maxInFlight).toBeLessThanOrEqual(2);
    const perSlug = await fleet.withSink(async (sink) => {
      const counts = new Map<string, number>();
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'limitless', channel: 'book' }))
        counts.set(envelope.symbol, (counts.get(envelope.symbol) ?? 0) + 1);
      return counts;
    });
    expect([...perSlug.keys()].sort()).toEqual([...slugs].sort());
    await fleet.stopCleanly(worker);
  }, 240_000);
});
