import { MalformedPayloadError, RateLimitedError } from '@tickfleet/core';
import { expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { CoinbaseAdapter, createVenueAdapter, type BeforeRequestInfo } from '../src/index.js';
import { caught, collect } from './async-helpers.js';
import { FixtureServer, type FixtureRoute } from './fixture-server.js';

const SEED = 9;
const T0 = Date.UTC(2024, 5, 3, 9, 15, 20);
const MINUTE = 60_000;

/** Coinbase Exchange through the CCXT engine, against the coinbase emulation over HTTP. */
describe('CoinbaseAdapter (CCXT engine) against the coinbase emulation', () => {
  let mock: MockVenue;
  let clock: ManualClock;
  afterEach(() => mock.stop());

  it('pages candles by time window, 300 at most, stepping over a hole longer than a page; every candle once', async () => {
    clock = new ManualClock(T0);
    const toMs = T0 - (T0 % MINUTE);
    const fromMs = toMs - 1000 * MINUTE;
    const holes = { rate: 0.02, ranges: [{ symbol: 'BTC/USD', fromMs: fromMs + 200 * MINUTE, toMs: fromMs + 560 * MINUTE }] };
    mock = await startMockVenue({ clock, scenario: { seed: SEED, venues: { coinbase: { holes } } } });
    const before: BeforeRequestInfo[] = [];
    const adapter = createVenueAdapter('coinbase', { baseUrl: mock.baseUrl('coinbase'), clock, hooks: { beforeRequest: async (i) => void before.push(i) } });
    expect(adapter).toBeInstanceOf(CoinbaseAdapter);
    const pages = await collect(adapter.fetchCandles('BTC/USD', '1m', fromMs, toMs));
    const want = expectedCandles('coinbase', 'BTC/USD', '1m', fromMs, toMs, SEED, { nowMs: T0, holes });
    expect(want.length).toBeLessThan(1000 - 360);
    const got = pages.flatMap((p) => p.candles);
    expect(got.map(({ trades: _, ...c }) => c)).toEqual(want.map(({ trades: _, ...c }) => c));
    expect(adapter.maxCandlesPerPage).toBe(300);
    const endpoints = before.map((b) => b.endpoint);
    expect(endpoints.slice(0, 2).sort()).toEqual(['currencies', 'products']);
    expect(endpoints.slice(2).every((e) => e === 'products/{id}/candles')).toBe(true);
    expect(before.every((b) => b.weight === 1)).toBe(true);
    expect(mock.stats().venues.coinbase).toMatchObject({ responses4xx: 0, overLimitRequests: 0 });
  });

  it('a 429 from the public limit is RateLimitedError; book snapshots carry the sequence', async () => {
    clock = new ManualClock(T0);
    mock = await startMockVenue({ clock, scenario: { seed: SEED, venues: { coinbase: { limit: { requests: 3, windowMs: 60_000 } } } } });
    const adapter = new CoinbaseAdapter({ baseUrl: mock.baseUrl('coinbase'), clock });
    const { book } = await adapter.fetchBook('ETH/USD');
    expect(book).toMatchObject({ venue: 'coinbase', symbol: 'ETH/USD', sequence: Math.floor(T0 / 100) - 1 });
    expect(book.bids).toHaveLength(50);
    expect(await caught(() => adapter.fetchBook('ETH/USD'))).toBeInstanceOf(RateLimitedError);
  });
});

describe('CCXT engine candle values', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('are decimal strings of the venue’s numbers, never in exponent form; a value that is no decimal spoils the page', async () => {
    const product =
      '{"id":"BTC-USD","base_currency":"BTC","quote_currency":"USD","quote_increment":"0.01","base_increment":"0.00000001","display_name":"BTC-USD","min_market_funds":"1","margin_enabled":false,"post_only":false,"limit_only":false,"cancel_only":false,"status":"online","status_message":"","auction_mode":false,"trading_disabled":false}';
    const t = (T0 - (T0 % MINUTE)) / 1000 - 120; // two closed minutes
    let candles = '';
    route = (req) => {
      if (req.path === '/currencies') return { body: '[]' };
      if (req.path === '/products') return { body: `[${product}]` };
      if (req.path === '/products/BTC-USD/candles') return { body: candles };
      return undefined;
    };
    const adapter = new CoinbaseAdapter({ baseUrl: server.url, clock: new ManualClock(T0) });
    // Newest first, as Coinbase sends them: [time, low, high, open, close, volume].
    candles = `[[${t + 60},67000.5,67010,67001.25,67009.99,1234567.5],[${t},66990,67005.5,66995,67001.25,0.00000012]]`;
    const got = (await collect(adapter.fetchCandles('BTC/USD', '1m', t * 1000, (t + 120) * 1000))).flatMap((p) => p.candles);
    expect(got.map((c) => [c.openTime, c.open, c.high, c.low, c.close, c.volume])).toEqual([
      [t * 1000, '66995', '67005.5', '66990', '67001.25', '0.00000012'],
      [(t + 60) * 1000, '67001.25', '67010', '67000.5', '67009.99', '1234567.5'],
    ]);
    candles = `[[${t},66990,67005.5,66995,67001.25,null]]`;
    const spoiled = await caught(() => collect(adapter.fetchCandles('BTC/USD', '1m', t * 1000, (t + 60) * 1000)));
    expect(spoiled).toBeInstanceOf(MalformedPayloadError);
  });
});
