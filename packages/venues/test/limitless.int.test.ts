import { MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError } from '@tickfleet/core';
import { bookAt, limitlessBookSlugs, limitlessMarkets, limitlessRawSize, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { LimitlessAdapter, type VenueRejectedError } from '../src/index.js';
import { caught } from './async-helpers.js';

const SEED = 5;

describe('LimitlessAdapter against the limitless emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  it('discovers every order-book market across pages of 25 and fetches its book exactly', async () => {
    // the adapter alone, unpaced (the fleet's budget paces it): the venue's 300 ms spacing is off
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { limitless: { markets: 60, limit: { enabled: false } } } } });
    const adapter = new LimitlessAdapter({ baseUrl: mock.baseUrl('limitless') });
    const instruments = await adapter.listInstruments();
    const markets = limitlessMarkets(SEED, 60);
    expect(instruments.map((i) => i.symbol)).toEqual(limitlessBookSlugs(markets));
    expect(mock.stats().venues.limitless.requests).toBe(3); // 25 + 25 + 10 markets
    expect(instruments[0]!.meta).toMatchObject({
      marketId: String(markets[0]!.id),
      tokenIds: markets[0]!.tokens,
      expirationTimestamp: markets[0]!.expirationTimestamp,
    });

    const slug = instruments[4]!.symbol;
    const sentAtMs = Date.now();
    const { book, envelope } = await adapter.fetchBook(slug);
    // The venue sends no timestamp: the emulation served the book of some second between sending and receiving.
    const served: ReturnType<typeof bookAt>[] = [];
    for (let t = Math.floor(sentAtMs / 1000) * 1000; t <= book.timeMs; t += 1000) served.push(bookAt('limitless', slug, t, SEED));
    // stored in shares: the generator's sizes, which the venue sent as millionths (limitlessRawSize)
    const asVenue = (levels: ReadonlyArray<readonly [string, string]>) => levels.map(([p, s]) => [String(Number(p)), String(limitlessRawSize(s) / 1e6)]);
    expect(served.some((b) => JSON.stringify([asVenue(b.bids), asVenue(b.asks)]) === JSON.stringify([book.bids, book.asks]))).toBe(true);
    expect(Number(book.bids[0]![0])).toBeLessThan(Number(book.asks[0]![0]));
    expect(envelope).toMatchObject({ channel: 'book', symbol: slug, venue: 'limitless' });

    const rejected = await caught(() => adapter.fetchBook('no-such-market'));
    expect(rejected).toBeInstanceOf(UnrecoverableError);
    expect((rejected as VenueRejectedError).venueMessage).toBe('Market not found');
  });

  it('maps the emulated limit to RateLimitedError at the window end, and faults to typed errors', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { limitless: { markets: 2, limit: { requests: 1, windowMs: 10_000 } } } } });
    const adapter = new LimitlessAdapter({ baseUrl: mock.baseUrl('limitless') });
    const slug = limitlessBookSlugs(limitlessMarkets(SEED, 2))[0]!;
    // One request per window: of three sent together at least one is answered 429, unless a
    // window boundary falls between them (a busy machine); then more go until the venue has
    // limited one. Every 429 the emulation served must come back as a RateLimitedError.
    const results: unknown[] = [];
    const sentAtMs = Date.now();
    for (let round = 0; round < 10 && mock.stats().venues.limitless.responses429 === 0; round++) {
      results.push(
        ...(await Promise.all(
          [0, 1, 2].map(() =>
            adapter.fetchBook(slug).then(
              () => 'ok',
              (e: unknown) => e,
            ),
          ),
        )),
      );
    }
    const limited = results.filter((r) => r instanceof RateLimitedError) as RateLimitedError[];
    const served = mock.stats().venues.limitless;
    expect(served.responses429).toBeGreaterThanOrEqual(1);
    expect(limited).toHaveLength(served.responses429);
    expect(results.filter((r) => r === 'ok')).toHaveLength(served.requests - served.responses429);
    expect(limited[0]!.retryAtMs).toBeGreaterThan(sentAtMs);
    expect(limited[0]!.fromVenue).toBe(true);

    mock.reset();
    mock.patchScenario({ venues: { limitless: { limit: { enabled: false }, errorRate: 1, errorStatuses: [503] } } });
    const down = await caught(() => adapter.fetchBook(slug));
    expect(down).toBeInstanceOf(TransientError);
    expect((down as TransientError).status).toBe(503);

    mock.patchScenario({ venues: { limitless: { errorRate: 0, malformedRate: 1 } } });
    for (let i = 0; i < 3; i++) {
      expect(await caught(() => adapter.fetchBook(slug))).toBeInstanceOf(MalformedPayloadError);
      expect(await caught(() => adapter.listInstruments())).toBeInstanceOf(MalformedPayloadError);
    }
  });
});
