import { ManualClock } from '@tickfleet/testkit';
import { MalformedPayloadError, RateLimitedError, UnrecoverableError } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { PolymarketAdapter } from './polymarket-adapter.js';
import { caught } from '../../test/async-helpers.js';

const YES = '71321045679252212594626385532706912750332728571942532289631379312455583992563';
const NO = '52114319501245915516055106046884209969926127482827954674443846427813813222426';

describe('PolymarketAdapter against documented response samples', () => {
  let clob: FixtureServer;
  let gamma: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    clob = await FixtureServer.start((req, s) => route(req, s));
    gamma = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(async () => {
    await clob.close();
    await gamma.close();
  });

  it('discovers order-book tokens from Gamma markets, decoding the JSON-encoded clobTokenIds', async () => {
    route = (req) => (req.path === '/markets' ? { body: req.query.get('offset') === '0' ? fixture('polymarket/markets.json') : '[]' } : undefined);
    const adapter = new PolymarketAdapter({ baseUrl: clob.url, discoveryBaseUrl: gamma.url, discoveryPageSize: 2 });
    const instruments = await adapter.listInstruments();
    expect(instruments).toEqual([
      {
        symbol: YES,
        venueSymbol: YES,
        name: 'Will Bitcoin reach $150,000 by December 31, 2025? [Yes]',
        meta: expect.objectContaining({ marketId: '253591', outcome: 'Yes', conditionId: expect.stringMatching(/^0x/) }),
        market: {
          marketId: '253591',
          slug: expect.any(String),
          title: 'Will Bitcoin reach $150,000 by December 31, 2025?',
          outcomes: ['Yes', 'No'],
          tokenIds: [YES, NO],
          expiresAtMs: Date.parse('2025-12-31T12:00:00Z'),
        },
      },
      expect.objectContaining({ symbol: NO, meta: expect.objectContaining({ outcome: 'No' }) }),
    ]);
    expect(gamma.requests.map((r) => Object.fromEntries(r.query))).toEqual([
      { active: 'true', closed: 'false', limit: '2', offset: '0' },
      { active: 'true', closed: 'false', limit: '2', offset: '2' },
    ]);
    expect(clob.requests).toHaveLength(0);
  });

  it('yields MalformedPayloadError when clobTokenIds does not decode', async () => {
    route = () => ({ body: JSON.stringify([{ id: '1', clobTokenIds: '["123", ' }]) });
    const err = await caught(() => new PolymarketAdapter({ baseUrl: clob.url }).listInstruments());
    expect(err).toBeInstanceOf(MalformedPayloadError);
  });

  it('fetches a batch with one POST /books at the batch weight; a token the answer leaves out comes back missing', async () => {
    route = (req) =>
      req.path === '/books' && req.method === 'POST'
        ? { body: `[${fixture('polymarket/book.json')}]` }
        : req.path === '/book'
          ? { body: fixture('polymarket/book.json') }
          : undefined;
    const adapter = new PolymarketAdapter({ baseUrl: clob.url });
    const before = clob.requests.length;
    const batch = await adapter.fetchBooks([YES, NO]);
    const sent = clob.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toEqual([{ token_id: YES }, { token_id: NO }]);
    expect(sent[0]!.headers['content-type']).toBe('application/json');
    expect(batch.missing).toEqual([NO]);
    expect(batch.weight).toBe(3);
    expect(batch.books.map((b) => b.book.symbol)).toEqual([YES]);
    expect(batch.books[0]!.envelope.messageId).toBe(`polymarket:${YES}:book:1727357346181`);
    const single = await adapter.fetchBook(YES);
    expect(batch.books[0]!.book).toEqual(single.book);
    await expect(adapter.fetchBooks(Array.from({ length: 501 }, (_, i) => String(i)))).rejects.toThrow(/1 to 500 symbols/);
  });

  it('parses a book, best levels first, with the venue timestamp', async () => {
    route = (req) => (req.path === '/book' && req.query.get('token_id') === YES ? { body: fixture('polymarket/book.json') } : undefined);
    const { book, envelope } = await new PolymarketAdapter({ baseUrl: clob.url }).fetchBook(YES);
    expect(book).toEqual({
      venue: 'polymarket',
      symbol: YES,
      timeMs: 1727357346181,
      bids: [
        ['0.114', '1200'],
        ['0.11', '300'],
        ['0.01', '1527.03'],
      ],
      asks: [
        ['0.116', '75'],
        ['0.12', '560.5'],
        ['0.99', '22000'],
      ],
    });
    expect(envelope).toMatchObject({ channel: 'book', serverTimeMs: 1727357346181, messageId: `polymarket:${YES}:book:1727357346181` });
    expect(envelope.payload).toMatchObject({ tickSize: '0.001', minOrderSize: '5', negRisk: false, hash: expect.any(String) });
  });

  it('orders a batch’s levels best first whatever order they came in, and names where a malformed batch breaks', async () => {
    const good = JSON.parse(fixture('polymarket/book.json')) as { bids: unknown[]; asks: unknown[] };
    // the CLOB's order (worst first), the reverse, and a shuffle: the same book
    const variants = [
      good,
      { ...good, bids: [...good.bids].reverse(), asks: [...good.asks].reverse() },
      { ...good, bids: [good.bids[1], good.bids[2], good.bids[0]], asks: [good.asks[2], good.asks[0], good.asks[1]] },
    ];
    const adapter = new PolymarketAdapter({ baseUrl: clob.url });
    const books = [];
    for (const v of variants) {
      route = (req) => (req.path === '/books' ? { body: JSON.stringify([v]) } : undefined);
      books.push((await adapter.fetchBooks([YES])).books[0]!.book);
    }
    expect(books[0]!.bids.map((l) => l[0])).toEqual(['0.114', '0.11', '0.01']);
    expect(books[0]!.asks.map((l) => l[0])).toEqual(['0.116', '0.12', '0.99']);
    expect(books[1]).toEqual(books[0]);
    expect(books[2]).toEqual(books[0]);
    route = (req) => (req.path === '/books' ? { body: JSON.stringify([good, { ...good, asks: [{ price: '0.5', size: 7 }] }]) } : undefined);
    const err = await caught(() => adapter.fetchBooks([YES]));
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect((err as Error).message).toMatch(/at 1\.asks\.0\.size/);
  });

  it('maps an unknown token 404 to an unrecoverable error with the venue message', async () => {
    route = () => ({ status: 404, body: fixture('polymarket/error-404.json') });
    const err = await caught(() => new PolymarketAdapter({ baseUrl: clob.url }).fetchBook('1'));
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as VenueRejectedError).venueMessage).toBe('No orderbook exists for the requested token id');
  });

  it('maps 429 to RateLimitedError and bounds delayed (throttled) answers with the timeout', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1));
    route = () => ({ status: 429, body: fixture('polymarket/error-429.json') });
    const err = await caught(() => new PolymarketAdapter({ baseUrl: clob.url, clock, rateLimitFallbackMs: 3000 }).fetchBook(YES));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1) + 3000);

    // a timeout far beyond the delay: the answer must be waited for, however slowly this machine runs
    route = () => ({ body: fixture('polymarket/book.json'), delayMs: 300 });
    const { book } = await new PolymarketAdapter({ baseUrl: clob.url, timeoutMs: 30_000 }).fetchBook(YES);
    expect(book.bids).toHaveLength(3);
  });

  it('yields MalformedPayloadError for a book with a bad timestamp or level', async () => {
    const good = JSON.parse(fixture('polymarket/book.json')) as Record<string, unknown>;
    route = () => ({ body: JSON.stringify({ ...good, timestamp: 'yesterday' }) });
    await expect(new PolymarketAdapter({ baseUrl: clob.url }).fetchBook(YES)).rejects.toBeInstanceOf(MalformedPayloadError);
    route = () => ({ body: JSON.stringify({ ...good, bids: [{ price: 0.5 }] }) });
    await expect(new PolymarketAdapter({ baseUrl: clob.url }).fetchBook(YES)).rejects.toBeInstanceOf(MalformedPayloadError);
  });
});
