import type { BookSnapshot, MarketRecord } from '@tickfleet/core';
import { DEFAULT_COINBASE_PRODUCTS, DEFAULT_SEED, KRAKEN_PAIRS, krakenModel, type ServedBook } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const WAIT = { timeoutMs: 150_000, intervalMs: 250 };

/**
 * Each venue's limit here (Kraken: a counter of 10 drained in 5 s; Coinbase: 20 requests a clock
 * window of 4 s), below what 1 s book polls of every pair ask for, so the budget paces the polls.
 * Coinbase's window is longer than its real second so the budget's boundary guard (5% of it) covers
 * a loaded machine's request latency.
 */
const CASES = [
  {
    venue: 'kraken' as const,
    limit: { requests: 10, windowMs: 5000 },
    connector: ['--policy', 'gcra', '--limit', '10', '--period', '5s', '--max-inflight', '2'],
    instruments: KRAKEN_PAIRS.map((p) => p.symbol),
  },
  {
    venue: 'coinbase' as const,
    limit: { requests: 20, windowMs: 4000 },
    connector: ['--limit', '20', '--period', '4s', '--max-inflight', '4'],
    instruments: DEFAULT_COINBASE_PRODUCTS.map((id) => id.replace('-', '/')),
  },
];

/** Distinct snapshots the emulation answered, per pair: `symbol tick`. */
const servedKeys = (served: readonly ServedBook[]): Set<string> => new Set(served.map((b) => `${b.symbol} ${b.tick}`));

/**
 * Discovery and book jobs of a venue on the CCXT engine, end to end with real processes: a
 * scheduler and two `tickfleet worker` processes, discovery listing the emulation's pairs (one
 * `markets` record and one book job each), book polls every second paced by the fleet's budget.
 * Ground truth is the emulation's: the snapshots it answered (pair and model tick) against the
 * books stored, and its limiter's counters.
 */
describe.each(CASES)('fleet: $venue discovery and book jobs through the CCXT engine', ({ venue, limit, connector, instruments }) => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { [venue]: { limit } } });
  });
  afterAll(() => fleet.stop());

  it('discovery stores the emulation’s pairs; every answered snapshot is stored once; 0 requests over the limit', async () => {
    await fleet.upsertConnector(venue, ...connector);
    await fleet.ok('jobs', 'add', venue, 'discovery', 'markets');
    fleet.mock.reset();
    const scheduler = fleet.spawnScheduler({ TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '1s' });
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    const polledThrice = (): boolean => {
      const served = [...servedKeys(fleet.mock.servedBooks(venue))].map((k) => k.split(' ')[0]);
      return instruments.every((s) => served.filter((x) => x === s).length >= 3);
    };
    await waitFor(polledThrice, `every ${venue} pair's book answered 3 times`, WAIT);
    await fleet.stopCleanly(scheduler);
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));

    // Discovery: one `listed` record and one enabled book job per pair of the emulation, no more.
    const { markets, books } = await fleet.withSink(async (sink) => {
      const markets: MarketRecord[] = [];
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue, channel: 'markets' })) markets.push(envelope.payload as MarketRecord);
      const books: BookSnapshot[] = [];
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue, channel: 'book' })) books.push(envelope.payload as BookSnapshot);
      return { markets, books };
    });
    expect(markets.map((m) => [m.symbol, m.event]).sort()).toEqual(instruments.map((s) => [s, 'listed']).sort());
    const jobs = await fleet.withStore((store) => store.jobs.list({ venue, type: 'book' }));
    expect(
      jobs
        .filter((j) => j.enabled)
        .map((j) => j.symbol)
        .sort(),
    ).toEqual([...instruments].sort());

    // Books: every snapshot answered is stored once (no poll lost, none stored twice).
    const served = fleet.mock.servedBooks(venue);
    expect(books.length).toBe(servedKeys(served).size);
    for (const s of instruments) {
      expect(books.filter((b) => b.symbol === s).length).toBe([...servedKeys(served)].filter((k) => k.startsWith(`${s} `)).length);
    }
    if (venue === 'coinbase') {
      // Coinbase's sequence is the model tick: the stored sequences are exactly the answered ticks.
      expect(new Set(books.map((b) => `${b.symbol} ${b.sequence}`))).toEqual(servedKeys(served));
    } else {
      // Kraken's Depth has no sequence: each stored book is the model's book at one answered tick.
      for (const b of books) {
        expect(b.bids.length).toBeGreaterThan(0);
        const model = krakenModel(b.symbol, DEFAULT_SEED);
        const ticks = served.filter((x) => x.symbol === b.symbol).map((x) => x.tick);
        const matches = ticks.some((tick) => {
          const want = model.levels(tick, b.bids.length);
          return want.bids.every(([p, q], i) => Number(b.bids[i]![0]) === Number(model.formatPrice(p)) && Number(b.bids[i]![1]) === Number(model.formatQty(q)));
        });
        expect(matches).toBe(true);
      }
    }

    const stats = fleet.mock.stats().venues[venue];
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    expect(stats.responses4xx + stats.responses5xx).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(limit.requests);
  }, 300_000);
});
