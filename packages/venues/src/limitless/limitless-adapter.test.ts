import { ManualClock } from '@tickfleet/testkit';
import { MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { LimitlessAdapter, sharesOf } from './limitless-adapter.js';
import { caught } from '../../test/async-helpers.js';

const SLUG = 'btc-above-100000-on-dec-31-1767225600000';
const YES = '27687694610130623013351012526567944730242898906227824547270172934678693687246';
const T0 = Date.UTC(2025, 11, 20, 8, 0, 0);

describe('LimitlessAdapter against samples shaped like the documented responses', () => {
  let venue: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    venue = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => venue.close());
  beforeEach(() => venue.requests.splice(0));

  it('pages /markets/active from page 1 until totalMarketsCount, lists CLOB markets and group children, skips AMM', async () => {
    route = (req) => (req.path === '/markets/active' ? { body: fixture(`limitless/markets-page-${req.query.get('page')}.json`) } : undefined);
    const instruments = await new LimitlessAdapter({ baseUrl: venue.url, discoveryPageSize: 2 }).listInstruments();
    expect(instruments.map((i) => i.symbol)).toEqual([
      SLUG,
      'fed-decision-in-january-no-change-1769644800000',
      'fed-decision-in-january-25-bps-cut-1769644800000',
    ]);
    expect(instruments[0]).toEqual({
      symbol: SLUG,
      venueSymbol: SLUG,
      name: 'BTC above $100,000 on Dec 31?',
      meta: {
        marketId: '4821',
        slug: SLUG,
        conditionId: expect.stringMatching(/^0x/),
        tokenIds: { yes: YES, no: '9288900480010863316984252765488448624297561656655547117581633191173128271467' },
        expirationTimestamp: 1767225600000,
        expirationDate: 'Dec 31, 2025',
      },
      market: {
        marketId: '4821',
        slug: SLUG,
        title: 'BTC above $100,000 on Dec 31?',
        outcomes: ['Yes', 'No'],
        tokenIds: [YES, '9288900480010863316984252765488448624297561656655547117581633191173128271467'],
        expiresAtMs: 1767225600000,
      },
    });
    expect(instruments[1]!.meta).toMatchObject({ marketId: '5003', groupSlug: 'fed-decision-in-january-1769644800000' });
    // 3 markets in total: page 2 ends the listing without asking for page 3.
    expect(venue.requests.map((r) => Object.fromEntries(r.query))).toEqual([
      { page: '1', limit: '2' },
      { page: '2', limit: '2' },
    ]);
  });

  it('refuses a page size above the documented maximum of 25, naming the option', () => {
    expect(() => new LimitlessAdapter({ baseUrl: venue.url, discoveryPageSize: 26 })).toThrow(/invalid discoveryPageSize: expected an integer from 1 to 25/);
  });

  it('parses a book, best levels first, stamped with the receive time, sizes from millionths to shares', async () => {
    route = (req) => (req.path === `/markets/${SLUG}/orderbook` ? { body: fixture('limitless/orderbook.json') } : undefined);
    const clock = new ManualClock(T0);
    const { book, envelope } = await new LimitlessAdapter({ baseUrl: venue.url, clock }).fetchBook(SLUG);
    expect(book).toEqual({
      venue: 'limitless',
      symbol: SLUG,
      timeMs: T0,
      bids: [
        ['0.61', '1250'],
        ['0.6', '500'],
        ['0.55', '20'],
      ],
      asks: [
        ['0.63', '800'],
        ['0.64', '310.5'],
        ['0.7', '5'],
      ],
    });
    expect(envelope).toMatchObject({ channel: 'book', receivedAtMs: T0, messageId: `limitless:${SLUG}:book:${T0}` });
    expect(envelope.serverTimeMs).toBeUndefined();
    expect(envelope.payload).toMatchObject({ tokenId: YES, adjustedMidpoint: '0.62', lastTradePrice: '0.62', maxSpread: '0.05', minSize: '5' });
  });

  it('moves the decimal point of a size six places exactly (no float rounding)', () => {
    expect([1377030000, 1, 999999, 1000000, 0, '12.5', 123456789012345, '0.000001'].map(sharesOf)).toEqual([
      '1377.03',
      '0.000001',
      '0.999999',
      '1',
      '0',
      '0.0000125',
      '123456789.012345',
      '0.000000000001',
    ]);
  });

  it('yields MalformedPayloadError with a sample for a book or a markets page of the wrong shape', async () => {
    const good = JSON.parse(fixture('limitless/orderbook.json')) as Record<string, unknown>;
    route = () => ({ body: JSON.stringify({ ...good, bids: [{ price: 'sixty', size: 1 }] }) });
    const bad = await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).fetchBook(SLUG));
    expect(bad).toBeInstanceOf(MalformedPayloadError);
    expect((bad as MalformedPayloadError).message).toMatch(/orderbook response has an unexpected shape at bids\.0\.price/);
    expect((bad as MalformedPayloadError).sample).toContain('"sixty"');

    route = () => ({ body: fixture('limitless/orderbook.json').slice(0, 40) });
    expect(await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).fetchBook(SLUG))).toBeInstanceOf(MalformedPayloadError);

    // A bare array where `{data, totalMarketsCount}` belongs.
    route = () => ({ body: JSON.stringify([{ slug: SLUG }]) });
    expect(await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).listInstruments())).toBeInstanceOf(MalformedPayloadError);
  });

  it('maps 429 to RateLimitedError honouring Retry-After, or the fallback wait without it', async () => {
    const clock = new ManualClock(T0);
    route = () => ({ status: 429, headers: { 'Retry-After': '7' }, body: fixture('limitless/error-429.json') });
    const withHeader = await caught(() => new LimitlessAdapter({ baseUrl: venue.url, clock }).fetchBook(SLUG));
    expect(withHeader).toBeInstanceOf(RateLimitedError);
    expect((withHeader as RateLimitedError).retryAtMs).toBe(T0 + 7000);

    route = () => ({ status: 429, body: fixture('limitless/error-429.json') });
    const without = await caught(() => new LimitlessAdapter({ baseUrl: venue.url, clock, rateLimitFallbackMs: 3000 }).listInstruments());
    expect(without).toBeInstanceOf(RateLimitedError);
    expect((without as RateLimitedError).retryAtMs).toBe(T0 + 3000);
  });

  it('maps the NestJS error bodies: 404 and 400 to unrecoverable errors with the venue message, 5xx to TransientError', async () => {
    route = () => ({ status: 404, body: fixture('limitless/error-404.json') });
    const missing = await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).fetchBook('no-such-market'));
    expect(missing).toBeInstanceOf(UnrecoverableError);
    expect((missing as VenueRejectedError).venueMessage).toBe('Market not found');

    route = () => ({ status: 400, body: fixture('limitless/error-400.json') });
    const refused = await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).listInstruments());
    expect(refused).toBeInstanceOf(UnrecoverableError);
    expect((refused as VenueRejectedError).venueMessage).toBe('limit must not be greater than 25');

    route = () => ({ status: 502, body: '{"statusCode":502,"message":"Bad Gateway"}' });
    const down = await caught(() => new LimitlessAdapter({ baseUrl: venue.url }).fetchBook(SLUG));
    expect(down).toBeInstanceOf(TransientError);
    expect((down as TransientError).status).toBe(502);
  });
});
