import { MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError } from '@tickfleet/core';
import { bookAt, marketTokenIds, polymarketMarkets, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { PolymarketAdapter } from '../src/index.js';
import { caught } from './async-helpers.js';

const SEED = 5;

describe('PolymarketAdapter against the polymarket emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  it('discovers every active market token across Gamma pages and fetches its book exactly', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polymarket: { markets: 150 } } } });
    const adapter = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket') });
    const instruments = await adapter.listInstruments();
    const want = polymarketMarkets(SEED, 150)
      .filter((m) => m.active && !m.closed)
      .flatMap(marketTokenIds);
    expect(instruments.map((i) => i.symbol)).toEqual(want);
    expect(mock.stats().venues.polymarket.requests).toBe(2); // 100 + 20 open markets

    const token = instruments[3]!.symbol;
    const { book, envelope } = await adapter.fetchBook(token);
    const venueBook = bookAt('polymarket', token, book.timeMs, SEED);
    expect(book.bids).toEqual(venueBook.bids);
    expect(book.asks).toEqual(venueBook.asks);
    expect(Number(book.bids[0]![0])).toBeLessThan(Number(book.asks[0]![0]));
    expect(envelope).toMatchObject({ channel: 'book', symbol: token, serverTimeMs: book.timeMs });

    expect(await caught(() => adapter.fetchBook('12345'))).toBeInstanceOf(UnrecoverableError);
  });

  it('rides out throttling by delay, and maps 429 beyond the delay budget to RateLimitedError', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polymarket: { markets: 2, limit: { requests: 3, windowMs: 5000, maxDelayMs: 6000 } } } } });
    const adapter = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket'), timeoutMs: 10_000 });
    const tokens = polymarketMarkets(SEED, 2).flatMap(marketTokenIds);
    // The window slides: of six sent at once, 3 are served and 3 queued until the first ones leave it.
    const books = await Promise.all([...tokens, ...tokens.slice(0, 2)].map((t) => adapter.fetchBook(t)));
    expect(books).toHaveLength(6);
    expect(mock.stats().venues.polymarket.delayedRequests).toBeGreaterThanOrEqual(3);

    mock.reset();
    mock.patchScenario({ venues: { polymarket: { limit: { requests: 1, windowMs: 10_000, maxDelayMs: 0 } } } });
    const results = await Promise.all(
      [0, 1, 2].map(() =>
        adapter.fetchBook(tokens[0]!).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    const limited = results.filter((r) => r instanceof RateLimitedError) as RateLimitedError[];
    expect(limited.length).toBeGreaterThanOrEqual(2);
    expect(limited[0]!.retryAtMs).toBeGreaterThan(Date.now());
  });

  it("paces discovery under Gamma's own limit, which the emulation enforces apart from the CLOB's", async () => {
    mock = await startMockVenue({
      scenario: { seed: SEED, venues: { polymarket: { markets: 12, gammaLimit: { requests: 2, windowMs: 1000, maxDelayMs: 0 } } } },
    });
    const want = polymarketMarkets(SEED, 12)
      .filter((m) => !m.closed)
      .flatMap(marketTokenIds);
    // a discovery pacing itself above Gamma's limit is refused by the emulation
    const careless = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket'), discoveryPageSize: 2, discoveryRateLimit: { limit: 100, periodMs: 1000 } });
    expect(await caught(() => careless.listInstruments())).toBeInstanceOf(RateLimitedError);
    expect(mock.stats().venues.polymarket.groups?.gamma.overLimitRequests).toBeGreaterThan(0);

    mock.reset();
    // 10 open markets, 2 per page: 6 pages, at most 2 in any sliding second
    const adapter = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket'), discoveryPageSize: 2, discoveryRateLimit: { limit: 2, periodMs: 1000 } });
    const instruments = await adapter.listInstruments();
    expect(instruments.map((i) => i.symbol)).toEqual(want);
    const gamma = mock.stats().venues.polymarket.groups?.gamma;
    expect(gamma).toMatchObject({ weightUsed: 6, overLimitRequests: 0, maxWindowWeight: 2 });
    expect(mock.stats().venues.polymarket.responses429).toBe(0);
  });

  it('bounds slow answers with the request timeout and types malformed bodies', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polymarket: { markets: 2, latencyMs: 1000 } } } });
    const token = marketTokenIds(polymarketMarkets(SEED, 2)[0]!)[0]!;
    const impatient = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket'), timeoutMs: 200 });
    expect(await caught(() => impatient.fetchBook(token))).toBeInstanceOf(TransientError);

    mock.patchScenario({ venues: { polymarket: { latencyMs: 0, malformedRate: 1 } } });
    const adapter = new PolymarketAdapter({ baseUrl: mock.baseUrl('polymarket') });
    for (let i = 0; i < 3; i++) {
      expect(await caught(() => adapter.fetchBook(token))).toBeInstanceOf(MalformedPayloadError);
      expect(await caught(() => adapter.listInstruments())).toBeInstanceOf(MalformedPayloadError);
    }
  });
});
