import { MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError } from '@tickfleet/core';
import { expectedCandles, krakenModel, lastClosedTick, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { CcxtAdapter, createVenueAdapter, KrakenAdapter, type AfterResponseInfo, type BeforeRequestInfo } from '../src/index.js';
import { caught, collect } from './async-helpers.js';
import { FixtureServer, type FixtureRoute } from './fixture-server.js';

const SEED = 5;
const T0 = Date.UTC(2024, 2, 4, 12, 30, 10, 500);
const MINUTE = 60_000;

/** Kraken through the CCXT engine: the emulation over HTTP, and documented error bodies from a fixture server. */
describe('KrakenAdapter (CCXT engine) against the kraken emulation', () => {
  let mock: MockVenue;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(T0);
    mock = await startMockVenue({ clock, scenario: { seed: SEED } });
  });
  afterAll(() => mock.stop());
  beforeEach(() => mock.reset());

  it('pages OHLC by since: every closed candle once, equal to expectedCandles, each request budgeted at its CCXT cost', async () => {
    const before: BeforeRequestInfo[] = [];
    const after: AfterResponseInfo[] = [];
    const adapter = createVenueAdapter('kraken', {
      baseUrl: mock.baseUrl('kraken'),
      clock,
      hooks: { beforeRequest: async (i) => void before.push(i), afterResponse: (i) => void after.push(i) },
      maxCandlesPerPage: 200,
    });
    expect(adapter).toBeInstanceOf(KrakenAdapter);
    const toMs = T0 - (T0 % MINUTE) + 10 * MINUTE; // runs past now: only closed candles come back
    const fromMs = toMs - 10 * MINUTE - 500 * MINUTE;
    const pages = await collect(adapter.fetchCandles('BTC/USD', '1m', fromMs, toMs));
    const want = expectedCandles('kraken', 'BTC/USD', '1m', fromMs, toMs, SEED, { nowMs: T0 });
    expect(want).toHaveLength(500);
    expect(pages.map((p) => p.candles.length)).toEqual([200, 200, 100]);
    const got = pages.flatMap((p) => p.candles);
    expect(got.map(({ trades: _, ...c }) => c)).toEqual(want.map(({ trades: _, ...c }) => c));
    expect(pages.flatMap((p) => p.envelopes).map((e) => e.messageId)).toEqual(got.map((c) => `kraken:BTC/USD:1m:${c.openTime}`));
    // Markets first (Assets, AssetPairs), then one OHLC per page: Kraken's counter counts each call 1.
    expect(before.map((b) => [b.endpoint, b.weight])).toEqual([
      ['Assets', 1],
      ['AssetPairs', 1],
      ['OHLC', 1],
      ['OHLC', 1],
      ['OHLC', 1],
    ]);
    expect(after.every((a) => a.status === 200 && a.venue === 'kraken')).toBe(true);
    expect(mock.stats().venues.kraken).toMatchObject({ requests: 5, weightUsed: 5, overLimitRequests: 0 });
    expect(adapter.toVenueSymbol('BTC/USD')).toBe('XXBTZUSD');
    expect(adapter.fromVenueSymbol('XDGUSD')).toBe('DOGE/USD');
  });

  it('book snapshots are the emulated book at pair_decimals; instruments are the unified markets', async () => {
    const adapter = new KrakenAdapter({ baseUrl: mock.baseUrl('kraken'), clock, depthLimit: 25 });
    const { book, envelope } = await adapter.fetchBook('ETH/USD');
    const model = krakenModel('ETH/USD', SEED);
    const truth = model.levels(lastClosedTick(T0), 25);
    expect(book.bids).toEqual(truth.bids.map(([p, q]) => [String(Number(model.formatPrice(p))), String(Number(model.formatQty(q)))]));
    expect(book.asks.map(([p]) => p)).toEqual(truth.asks.map(([p]) => String(Number(model.formatPrice(p)))));
    expect(book).toMatchObject({ venue: 'kraken', symbol: 'ETH/USD', timeMs: T0 });
    expect(envelope.messageId).toBe(`kraken:XETHZUSD:book:${T0}`);
    const instruments = await adapter.listInstruments();
    expect(instruments.map((i) => i.symbol)).toContain('DOGE/USD');
    expect(instruments.find((i) => i.symbol === 'BTC/USD')).toMatchObject({ venueSymbol: 'XXBTZUSD', meta: { precision: { price: 0.1 } } });
  });

  it('a full call counter is RateLimitedError; 5xx transient; a bad symbol unrecoverable; a spoiled body malformed', async () => {
    mock.patchScenario({ venues: { kraken: { limit: { requests: 3, windowMs: 60_000 } } } });
    try {
      const adapter = new KrakenAdapter({ baseUrl: mock.baseUrl('kraken'), clock });
      await adapter.fetchBook('BTC/USD'); // Assets, AssetPairs, Depth: the counter is full
      const limited = await caught(() => adapter.fetchBook('BTC/USD'));
      expect(limited).toBeInstanceOf(RateLimitedError);
      expect((limited as RateLimitedError).message).toContain('EAPI:Rate limit exceeded');
      expect((limited as RateLimitedError).fromVenue).toBe(false);
      expect(mock.stats().venues.kraken.overLimitRequests).toBe(1);
    } finally {
      mock.patchScenario({ venues: { kraken: { limit: { requests: 15, windowMs: 45_000 } } } });
    }
    const adapter = new KrakenAdapter({ baseUrl: mock.baseUrl('kraken'), clock });
    const unknown = await caught(() => adapter.fetchBook('NOPE/USD'));
    expect(unknown).toBeInstanceOf(UnrecoverableError);
    expect((unknown as Error).message).toMatch(/kraken refused: .*NOPE\/USD/);
    mock.patchScenario({ venues: { kraken: { errorRate: 1, errorStatuses: [503] } } });
    const down = await caught(() => adapter.fetchBook('BTC/USD'));
    expect(down).toBeInstanceOf(TransientError);
    mock.patchScenario({ venues: { kraken: { errorRate: 0, malformedRate: 1 } } });
    // both spoilings: a truncated body and well-formed JSON of the wrong shape
    for (let i = 0; i < 4; i++) expect(await caught(() => adapter.fetchBook('BTC/USD'))).toBeInstanceOf(MalformedPayloadError);
    expect(mock.stats().venues.kraken.malformedResponses).toBe(4);
    mock.patchScenario({ venues: { kraken: { malformedRate: 0 } } });
  });
});

describe('CCXT engine against recorded error answers', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('HTTP 429 with Retry-After is RateLimitedError from the venue; EService:Unavailable transient; EGeneral:Invalid arguments unrecoverable', async () => {
    const clock = new ManualClock(T0);
    const pairs =
      '{"error":[],"result":{"XXBTZUSD":{"altname":"XBTUSD","wsname":"XBT/USD","base":"XXBT","quote":"ZUSD","pair_decimals":1,"lot_decimals":8,"status":"online"}}}';
    let depth: { status?: number; headers?: Record<string, string>; body: string } = { body: '' };
    route = (req) => {
      if (req.path === '/0/public/Assets') return { body: '{"error":[],"result":{}}' };
      if (req.path === '/0/public/AssetPairs') return { body: pairs };
      if (req.path === '/0/public/Depth') return depth;
      return undefined;
    };
    const adapter = new CcxtAdapter('kraken', { baseUrl: server.url, clock });
    depth = { status: 429, headers: { 'Retry-After': '7' }, body: '{"error":["EGeneral:Too many requests"]}' };
    const limited = await caught(() => adapter.fetchBook('BTC/USD'));
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited).toMatchObject({ retryAtMs: T0 + 7000, fromVenue: true });
    // CCXT's broad match gives RateLimitExceeded, not a DDoSProtection: rate limited all the same
    depth = { body: '{"error":["EQuery:Rate limit exceeded"]}' };
    expect(await caught(() => adapter.fetchBook('BTC/USD'))).toBeInstanceOf(RateLimitedError);
    depth = { body: '{"error":["EService:Unavailable"]}' };
    expect(await caught(() => adapter.fetchBook('BTC/USD'))).toBeInstanceOf(TransientError);
    depth = { body: '{"error":["EGeneral:Invalid arguments"]}' };
    const bad = await caught(() => adapter.fetchBook('BTC/USD'));
    expect(bad).toBeInstanceOf(UnrecoverableError);
    expect((bad as Error).message).toContain('EGeneral:Invalid arguments');
  });

  it('an unknown CCXT exchange id fails naming it, on first use', async () => {
    const adapter = createVenueAdapter('ccxt-nosuchexchange', { baseUrl: 'http://127.0.0.1:1' });
    expect(adapter).toBeInstanceOf(CcxtAdapter);
    await expect(collect((adapter as CcxtAdapter).fetchCandles('BTC/USD', '1m', 0, 60_000))).rejects.toThrow(/nosuchexchange/);
  });
});
