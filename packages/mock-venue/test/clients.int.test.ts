/**
 * Widely used clients parse every emulated endpoint the fleet uses, over real HTTP: Binance's
 * `binance` (tiagosiebler) MainClient for exchangeInfo, depth and klines and its -1003 errors, and
 * Polymarket's official @polymarket/clob-client for the CLOB book (and its own book hash). Gamma
 * `/markets` has no official TypeScript client; PolymarketAdapter's schemas cover it.
 */
import { ApiError, Chain, ClobClient, type OrderBookSummary } from '@polymarket/clob-client';
import { MainClient, type SymbolLotSizeFilter, type SymbolMinNotionalFilter, type SymbolPriceFilter } from 'binance';
import { ManualClock } from '@tickfleet/testkit';
import { bookAt } from '../src/data/books.js';
import { expectedCandles } from '../src/expected-candles.js';
import { marketTokenIds, polymarketMarkets } from '../src/data/markets.js';
import { startMockVenue, type MockVenue } from '../src/mock-venue-server.js';
import { binanceDepthSnapshot } from '../src/venues/binance-ws-market.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30, 250);
const SEED = 11;

describe('public clients against the emulations', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(T0);
    mv = await startMockVenue({ clock, scenario: { seed: SEED, venues: { polymarket: { markets: 6 } } } });
  });
  afterAll(() => mv.stop());

  test('binance MainClient: exchangeInfo with rate limits and filters, depth, klines', async () => {
    const client = new MainClient({ baseUrl: mv.baseUrl('binance'), disableTimeSync: true });
    const info = await client.getExchangeInfo();
    expect(info.serverTime).toBe(T0);
    expect(info.rateLimits).toEqual([
      { rateLimitType: 'REQUEST_WEIGHT', interval: 'MINUTE', intervalNum: 1, limit: 6000 },
      { rateLimitType: 'ORDERS', interval: 'SECOND', intervalNum: 10, limit: 50 },
      { rateLimitType: 'ORDERS', interval: 'DAY', intervalNum: 1, limit: 160_000 },
      { rateLimitType: 'RAW_REQUESTS', interval: 'MINUTE', intervalNum: 5, limit: 61_000 },
    ]);
    const btc = info.symbols.find((s) => s.symbol === 'BTCUSDT')!;
    expect(btc).toMatchObject({ baseAsset: 'BTC', quoteAsset: 'USDT', status: 'TRADING' });
    const price = btc.filters.find((f): f is SymbolPriceFilter => f.filterType === 'PRICE_FILTER')!;
    const lot = btc.filters.find((f): f is SymbolLotSizeFilter => f.filterType === 'LOT_SIZE')!;
    const notional = btc.filters.find((f): f is SymbolMinNotionalFilter => f.filterType === 'NOTIONAL')!;
    expect(Number(price.tickSize)).toBeGreaterThan(0);
    expect(Number(lot.stepSize)).toBe(0.00001);
    expect(notional).toMatchObject({ minNotional: '5.00000000', applyMinToMarket: true });

    const depth = await client.getOrderBook({ symbol: 'BTCUSDT', limit: 10 });
    const book = JSON.parse(binanceDepthSnapshot('BTC/USDT', T0, SEED, 10)) as { lastUpdateId: number; bids: unknown; asks: unknown };
    expect(depth.lastUpdateId).toBe(book.lastUpdateId);
    expect(depth.bids).toEqual(book.bids);
    expect(depth.asks).toEqual(book.asks);

    const klines = await client.getKlines({ symbol: 'BTCUSDT', interval: '1m', limit: 3 });
    // the three newest closed minutes: 07:57, 07:58, 07:59 (T0 is 08:00:30)
    const minute = T0 - (T0 % 60_000);
    const want = expectedCandles('binance', 'BTC/USDT', '1m', minute - 3 * 60_000, minute, SEED);
    expect(klines.map((k) => [k[0], k[4]])).toEqual(want.map((c) => [c.openTime, c.close]));
  });

  test('binance MainClient surfaces the -1003 weight-limit and ban bodies', async () => {
    mv.reset();
    mv.patchScenario({ venues: { binance: { limit: { weight: 20, banAfter: 0, banMs: 60_000 } } } });
    try {
      const client = new MainClient({ baseUrl: mv.baseUrl('binance'), disableTimeSync: true });
      await client.getExchangeInfo(); // weight 20: the minute is full
      const limited = await client.getOrderBook({ symbol: 'BTCUSDT', limit: 5 }).catch((e: unknown) => e);
      expect(limited).toMatchObject({
        code: -1003,
        message:
          'Too much request weight used; current limit is 20 request weight per 1 MINUTE. Please use the websocket for live updates to avoid polling the API.',
      });
      const banned = await client.getOrderBook({ symbol: 'BTCUSDT', limit: 5 }).catch((e: unknown) => e);
      expect(banned).toMatchObject({
        code: -1003,
        message: `Way too much request weight used; IP banned until ${T0 + 60_000}. Please use the websocket for live updates to avoid bans.`,
      });
    } finally {
      mv.patchScenario({ venues: { binance: { limit: { weight: 6000, banAfter: 5, banMs: 120_000 } } } });
      mv.reset();
    }
  });

  test('clob-client: getOrderBook parses every field; getOrderBookHash recomputes the served hash; 404 as ApiError', async () => {
    const market = polymarketMarkets(SEED, 6)[2]!;
    const token = marketTokenIds(market)[0]!;
    const clob = new ClobClient(
      mv.baseUrl('polymarket'),
      Chain.POLYGON,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      false,
      undefined,
      undefined,
      false,
    );
    const book: OrderBookSummary = await clob.getOrderBook(token);
    const snap = bookAt('polymarket', token, T0, SEED);
    expect(book).toMatchObject({ market: market.conditionId, asset_id: token, timestamp: String(T0), min_order_size: '5' });
    expect(['0.01', '0.001']).toContain(book.tick_size);
    expect(typeof book.neg_risk).toBe('boolean');
    expect(book.bids.at(-1)).toEqual({ price: snap.bids[0]![0], size: snap.bids[0]![1] });
    expect(book.asks.at(-1)).toEqual({ price: snap.asks[0]![0], size: snap.asks[0]![1] });
    expect([book.bids.at(-1)!.price, book.asks.at(-1)!.price]).toContain(book.last_trade_price);
    const served = book.hash;
    expect(await clob.getOrderBookHash({ ...book })).toBe(served);

    const strict = new ClobClient(
      mv.baseUrl('polymarket'),
      Chain.POLYGON,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      false,
      undefined,
      undefined,
      false,
      undefined,
      true,
    );
    const missing = await strict.getOrderBook('123').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, data: { error: 'No orderbook exists for the requested token id' } });
  });
});
