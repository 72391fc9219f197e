/**
 * Widely used clients parse every emulated endpoint the fleet uses, over real HTTP: Binance's
 * `binance` (tiagosiebler) MainClient for exchangeInfo, depth, klines, aggTrades and
 * historicalTrades (the REST tape the stream sessions heal gaps from) and its -1003 errors,
 * Polymarket's official @polymarket/clob-client for the CLOB book (and its own book hash),
 * Alpaca's official @alpacahq/alpaca-trade-api for single-symbol stock bars, Limitless's official
 * @limitless-exchange/sdk for active markets, order books and the throttler's 429, and CCXT's
 * `kraken` for Kraken's public REST (markets with pair_decimals, OHLC, Trades, Depth, error arrays)
 * and CCXT's `coinbaseexchange` for Coinbase Exchange's public market data (products, candles, trades, book).
 * Gamma `/markets` has no official TypeScript client; PolymarketAdapter's schemas cover it.
 */
import { marketData, PermissionError } from '@alpacahq/alpaca-trade-api';
import { HttpClient, MarketFetcher, RateLimitError } from '@limitless-exchange/sdk';
import ccxt from 'ccxt';
import { ApiError, Chain, ClobClient, Side, type OrderBookSummary } from '@polymarket/clob-client';
import { MainClient, type SymbolLotSizeFilter, type SymbolMinNotionalFilter, type SymbolPriceFilter } from 'binance';
import { ManualClock } from '@tickfleet/testkit';
import { bookAt } from '../src/data/books.js';
import { candleValuesAt } from '../src/data/candles.js';
import { expectedCandles } from '../src/expected-candles.js';
import { marketTokenIds, polymarketMarkets } from '../src/data/markets.js';
import { startMockVenue, type MockVenue } from '../src/mock-venue-server.js';
import { alpacaBarTimes } from '../src/venues/alpaca-emulation.js';
import { rawSize } from '../src/venues/limitless-emulation.js';
import { limitlessBookSlugs, limitlessMarkets } from '../src/venues/limitless-markets.js';
import { binanceDepthSnapshot, binanceModel } from '../src/venues/binance-ws-market.js';
import { krakenModel } from '../src/venues/kraken-ws-emulation.js';
import { streamModel } from '../src/venues/stream-book-model.js';
import { lastClosedTick, STREAM_TICK_MS, type ModelAggregate } from '../src/venues/stream-book-model.js';

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

  test('binance MainClient: ticker/bookTicker for one, several and every symbol, the top of the depth book, at weight 2 or 4', async () => {
    const client = new MainClient({ baseUrl: mv.baseUrl('binance'), disableTimeSync: true });
    const top = (pair: string) => {
      const b = JSON.parse(binanceDepthSnapshot(pair, T0, SEED, 1)) as { bids: string[][]; asks: string[][] };
      return { bidPrice: b.bids[0]![0], bidQty: b.bids[0]![1], askPrice: b.asks[0]![0], askQty: b.asks[0]![1] };
    };
    expect(await client.getSymbolOrderBookTicker({ symbol: 'BTCUSDT' })).toEqual({ symbol: 'BTCUSDT', ...top('BTC/USDT') });
    const many = await client.getSymbolOrderBookTicker({ symbols: ['ETHUSDT', 'BTCUSDT'] });
    expect(many).toEqual([
      { symbol: 'ETHUSDT', ...top('ETH/USDT') },
      { symbol: 'BTCUSDT', ...top('BTC/USDT') },
    ]);
    const all = (await client.getSymbolOrderBookTicker()) as Array<{ symbol: string }>;
    expect(all.length).toBeGreaterThan(2);
    expect(all.map((t) => t.symbol)).toEqual(expect.arrayContaining(['BTCUSDT', 'ETHUSDT']));
    // one unknown symbol fails the whole request, as Binance answers
    await expect(client.getSymbolOrderBookTicker({ symbols: ['BTCUSDT', 'NOPEUSDT'] })).rejects.toMatchObject({ code: -1121 });
    // the weight each form spends, from the used-weight header of back-to-back requests
    const used = async (query: string) =>
      Number((await fetch(`${mv.baseUrl('binance')}/api/v3/ticker/bookTicker${query}`)).headers.get('x-mbx-used-weight-1m'));
    const w0 = await used('?symbol=BTCUSDT');
    const w1 = await used('?symbol=BTCUSDT');
    const w2 = await used(`?symbols=${encodeURIComponent('["BTCUSDT","ETHUSDT"]')}`);
    const w3 = await used('');
    expect([w1 - w0, w2 - w1, w3 - w2]).toEqual([2, 4, 4]);
  });

  test('binance MainClient: aggTrades by time and historicalTrades by trade id parse to the tape', async () => {
    const client = new MainClient({ baseUrl: mv.baseUrl('binance'), disableTimeSync: true });
    const model = binanceModel('BTC/USDT', SEED);
    // Four closed seconds before T0: every aggregate whose time lies in them, by the model.
    const from = T0 - 5250;
    const to = T0 - 1250;
    const want: ModelAggregate[] = [];
    for (let tick = Math.floor(from / STREAM_TICK_MS); tick <= Math.floor(to / STREAM_TICK_MS); tick++) {
      want.push(...model.aggsInTick(tick).filter((a) => a.timeMs >= from && a.timeMs <= to));
    }
    expect(want.length).toBeGreaterThan(10);

    const aggs = await client.getAggregateTrades({ symbol: 'BTCUSDT', startTime: from, endTime: to });
    expect(aggs).toEqual(
      want.map((a) => ({
        a: a.id,
        p: model.formatPrice(a.priceTicks, 8),
        q: model.formatQty(a.qtyUnits, 8),
        f: a.firstTradeId,
        l: a.lastTradeId,
        T: a.timeMs,
        m: a.buyerMaker,
        M: true,
      })),
    );
    // Paging by aggregate id (how a session walks a hole larger than a page) returns the same rows.
    expect(await client.getAggregateTrades({ symbol: 'BTCUSDT', fromId: aggs[3]!.a, limit: 5 })).toEqual(aggs.slice(3, 8));

    // historicalTrades from the first aggregate's first fill: every fill on its own, the aggregates' ids and quantities.
    const firstId = aggs[0]!.f;
    const lastId = aggs.at(-1)!.l;
    const trades = await client.getHistoricalTrades({ symbol: 'BTCUSDT', fromId: firstId, limit: lastId - firstId + 1 });
    expect(trades.map((t) => t.id)).toEqual(Array.from({ length: lastId - firstId + 1 }, (_, i) => firstId + i));
    const fills = model.tradesBetween(firstId, lastId);
    expect(trades.map((t) => [t.id, t.price, t.qty, t.time, t.isBuyerMaker, t.isBestMatch])).toEqual(
      fills.map((f) => [f.id, model.formatPrice(f.priceTicks, 8), model.formatQty(f.qtyUnits, 8), f.timeMs, f.buyerMaker, true]),
    );
    for (const t of trades) expect(Number(t.quoteQty)).toBeCloseTo(Number(t.price) * Number(t.qty), 7);
    for (const a of aggs) {
      const own = trades.filter((t) => t.id >= a.f && t.id <= a.l);
      expect(own.every((t) => t.price === a.p && t.time === a.T && t.isBuyerMaker === a.m)).toBe(true);
      expect(own.reduce((n, t) => n + Math.round(Number(t.qty) * 1e5), 0)).toBe(Math.round(Number(a.q) * 1e5));
    }
    // Some aggregates fill more than one trade: the case only historicalTrades can heal.
    expect(aggs.some((a) => a.l > a.f)).toBe(true);
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
    const invalid = await strict.getOrderBook('').catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ApiError);
    expect(invalid).toMatchObject({ status: 400, data: { error: 'Invalid token id' } });
  });

  test('alpaca-trade-api: stockBarSingle pages day bars; SIP without end is served; an unknown key is a PermissionError', async () => {
    const stocks = (keyId: string) =>
      new marketData.StockApi(new marketData.Configuration({ basePath: mv.baseUrl('alpaca'), keyId, secret: 'emulation-secret-000000000000000000000001' }));
    const client = stocks('PKEMULATIONTEST00001');
    const from = Date.UTC(2024, 0, 2);
    const bars: marketData.StockBar[] = [];
    let pageToken: string | undefined;
    let pages = 0;
    do {
      // no end: the SIP feed is served up to 15 minutes before now (T0), not refused
      const page = await client.stockBarSingle({ symbol: 'AAPL', timeframe: '1Day', start: new Date(from), limit: 5, feed: 'sip', pageToken });
      expect(page.symbol).toBe('AAPL');
      bars.push(...page.bars);
      pageToken = page.nextPageToken ?? undefined;
      pages += 1;
    } while (pageToken !== undefined);
    const want = alpacaBarTimes('AAPL', '1d', from, T0 - 15 * 60_000 + 1, T0, SEED);
    expect(want).toHaveLength(9); // 2024-01-02 .. 01-12; T0 is Martin Luther King Jr. Day
    expect(pages).toBe(2);
    expect(bars.map((b) => b.t.getTime())).toEqual(want);
    expect(bars.map((b) => b.c)).toEqual(want.map((t) => candleValuesAt('alpaca', 'AAPL', '1h', t, SEED).close));

    const denied = await stocks('not a key')
      .stockBarSingle({ symbol: 'AAPL', timeframe: '1Day' })
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionError);
    expect(denied).toMatchObject({ status: 403, message: 'forbidden.' });
  });

  describe('ccxt kraken', () => {
    const kraken = (): InstanceType<typeof ccxt.kraken> => {
      const k = new ccxt.kraken({ enableRateLimit: false });
      k.urls['api'] = { ...(k.urls['api'] as Record<string, string>), public: mv.baseUrl('kraken') };
      return k;
    };

    test('loadMarkets: ids, unified symbols and pair_decimals as price precision', async () => {
      const k = kraken();
      const markets = await k.loadMarkets();
      expect(markets['BTC/USD']).toMatchObject({ id: 'XXBTZUSD', altname: 'XBTUSD', base: 'BTC', quote: 'USD', active: true, precision: { price: 0.1 } });
      expect(markets['DOGE/USD']).toMatchObject({ id: 'XDGUSD', precision: { price: 1e-7 } });
      expect(markets['ETH/BTC']).toMatchObject({ id: 'XETHXXBT', precision: { price: 0.00001 } });
      expect(Object.keys(markets)).toHaveLength(12);
    });

    test('fetchOHLCV: the closed candles since a time, then the open frame; prices at pair_decimals', async () => {
      const k = kraken();
      const minute = T0 - (T0 % 60_000);
      const since = minute - 30 * 60_000;
      const rows = await k.fetchOHLCV('BTC/USD', '1m', since);
      const want = expectedCandles('kraken', 'BTC/USD', '1m', since, minute, SEED, { nowMs: T0 });
      expect(want).toHaveLength(30);
      expect(rows.slice(0, -1).map((r) => [r[0], r[1], r[4], r[5]])).toEqual(want.map((c) => [c.openTime, Number(c.open), Number(c.close), Number(c.volume)]));
      expect(rows.at(-1)![0]).toBe(minute);
      for (const r of rows) expect(Math.round(Number(r[4]) * 10) / 10).toBe(r[4]);
      // Kraken keeps 720 entries: a since beyond them gets the 720 most recent.
      const old = await k.fetchOHLCV('BTC/USD', '1m', minute - 10_000 * 60_000);
      expect(old).toHaveLength(720);
      expect(old[0]![0]).toBe(minute - 719 * 60_000);
    });

    test('fetchTrades: the model tape since a time, with trade ids; fetchOrderBook: the model book', async () => {
      const k = kraken();
      const model = krakenModel('BTC/USD', SEED);
      const since = T0 - 4000;
      const trades = await k.fetchTrades('BTC/USD', since);
      const sinceSecond = Math.floor(since / 1000) * 1000;
      const first = model.lastTradeId(Math.floor(sinceSecond / STREAM_TICK_MS) - 1) + 1;
      const want = model.tradesBetween(first, model.lastTradeId(lastClosedTick(T0))).filter((t) => t.timeMs >= since);
      expect(want.length).toBeGreaterThan(10);
      expect(trades.map((t) => [Number(t.id), t.timestamp, t.price, t.amount, t.side])).toEqual(
        want.map((t) => [t.id, t.timeMs, Number(model.formatPrice(t.priceTicks)), Number(model.formatQty(t.qtyUnits)), t.buyerMaker ? 'sell' : 'buy']),
      );
      expect(model.priceDecimals).toBe(1);

      const book = await k.fetchOrderBook('BTC/USD', 10);
      const levels = model.levels(lastClosedTick(T0), 10);
      expect(book.bids.map(([p, q]) => [p, q])).toEqual(levels.bids.map(([p, q]) => [Number(model.formatPrice(p)), Number(model.formatQty(q))]));
      expect(book.asks.map(([p]) => p)).toEqual(levels.asks.map(([p]) => Number(model.formatPrice(p))));
    });

    test('the call counter: a full counter answers EAPI:Rate limit exceeded, which ccxt raises as DDoSProtection', async () => {
      mv.reset();
      mv.patchScenario({ venues: { kraken: { limit: { requests: 3, windowMs: 60_000 } } } });
      try {
        const k = kraken();
        await k.loadMarkets(); // Assets and AssetPairs: 2 of 3
        await k.fetchOrderBook('ETH/USD', 5);
        const limited = await k.fetchOrderBook('ETH/USD', 5).catch((e: unknown) => e);
        expect(limited).toBeInstanceOf(ccxt.DDoSProtection);
        expect((limited as Error).message).toContain('EAPI:Rate limit exceeded');
        expect(mv.stats().venues.kraken).toMatchObject({ requests: 4, overLimitRequests: 1, maxWindowWeight: 3 });
        const bad = await k.publicGetDepth({ pair: 'NOPEUSD' }).catch((e: unknown) => e);
        expect(bad).toBeInstanceOf(ccxt.DDoSProtection);
      } finally {
        mv.patchScenario({ venues: { kraken: { limit: { requests: 15, windowMs: 45_000 } } } });
        mv.reset();
      }
      const unknown = await kraken()
        .publicGetDepth({ pair: 'NOPEUSD' })
        .catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(ccxt.ExchangeError);
      expect((unknown as Error).message).toContain('EQuery:Unknown asset pair');
    });
  });

  describe('ccxt coinbaseexchange', () => {
    const coinbase = (): InstanceType<typeof ccxt.coinbaseexchange> => {
      const c = new ccxt.coinbaseexchange({ enableRateLimit: false });
      c.urls['api'] = { public: mv.baseUrl('coinbase'), private: mv.baseUrl('coinbase') };
      return c;
    };

    test('loadMarkets, fetchOHLCV by since (300 at most, newest first on the wire), fetchTrades, fetchOrderBook', async () => {
      const c = coinbase();
      const markets = await c.loadMarkets();
      expect(markets['BTC/USD']).toMatchObject({ id: 'BTC-USD', base: 'BTC', quote: 'USD', active: true });
      expect(Object.keys(markets).sort()).toEqual(['BTC/EUR', 'BTC/USD', 'DOGE/USD', 'ETH/BTC', 'ETH/USD', 'SOL/USD']);
      const minute = T0 - (T0 % 60_000);
      const since = minute - 400 * 60_000;
      const rows = await c.fetchOHLCV('ETH/USD', '1m', since, 300);
      const want = expectedCandles('coinbase', 'ETH/USD', '1m', since, since + 300 * 60_000, SEED, { nowMs: T0 });
      expect(want).toHaveLength(300);
      expect(rows.map((r) => [r[0], String(r[1]), String(r[2]), String(r[3]), String(r[4]), String(r[5])])).toEqual(
        want.map((w) => [w.openTime, w.open, w.high, w.low, w.close, w.volume]),
      );
      // more than 300 candles in one window: Coinbase's 400, which ccxt raises as ExchangeError
      const tooMany = await c
        .publicGetProductsIdCandles({ id: 'ETH-USD', granularity: 60, start: new Date(since).toISOString(), end: new Date(minute).toISOString() })
        .catch((e: unknown) => e);
      expect(tooMany).toBeInstanceOf(ccxt.ExchangeError);
      expect((tooMany as Error).message).toContain('Count of aggregations requested exceeds 300');

      const model = streamModel('coinbase', 'BTC/USD', SEED, 8);
      const trades = await c.fetchTrades('BTC/USD', undefined, 20);
      const newest = model.lastTradeId(lastClosedTick(T0));
      expect(trades.map((t) => Number(t.id))).toEqual(Array.from({ length: 20 }, (_, i) => newest - 19 + i));
      const book = await c.fetchOrderBook('BTC/USD');
      const levels = model.levels(lastClosedTick(T0), 50);
      expect(book.bids.map(([p]) => p)).toEqual(levels.bids.map(([p]) => Number(model.formatPrice(p))));
      expect(book.nonce).toBe(lastClosedTick(T0));
    });

    test('the public limit answers 429, raised by ccxt as a rate-limit error', async () => {
      mv.reset();
      mv.patchScenario({ venues: { coinbase: { limit: { requests: 2, windowMs: 60_000 } } } });
      try {
        const c = coinbase();
        await c.loadMarkets(); // products and currencies: 2 of 2
        const limited = await c.fetchOrderBook('BTC/USD').catch((e: unknown) => e);
        expect(limited).toBeInstanceOf(ccxt.RateLimitExceeded);
        expect(mv.stats().venues.coinbase).toMatchObject({ responses429: 1, overLimitRequests: 1 });
      } finally {
        mv.patchScenario({ venues: { coinbase: { limit: { requests: 10, windowMs: 1000 } } } });
        mv.reset();
      }
    });
  });

  test('clob-client: getOrderBooks posts a batch to /books; each summary hashes as served; books without one left out', async () => {
    const markets = polymarketMarkets(SEED, 6);
    const tokens = [marketTokenIds(markets[0]!)[0]!, marketTokenIds(markets[4]!)[1]!, marketTokenIds(markets[1]!)[1]!];
    const clob = new ClobClient(mv.baseUrl('polymarket'), Chain.POLYGON);
    const before = mv.polymarketBookRequests().length;
    const books: OrderBookSummary[] = await clob.getOrderBooks([
      ...tokens.map((token_id) => ({ token_id, side: Side.BUY })),
      { token_id: '123', side: Side.BUY },
    ]);
    expect(books.map((b) => b.asset_id)).toEqual(tokens);
    for (const book of books) {
      const snap = bookAt('polymarket', book.asset_id, T0, SEED);
      expect(book.bids.at(-1)).toEqual({ price: snap.bids[0]![0], size: snap.bids[0]![1] });
      expect(await clob.getOrderBookHash({ ...book })).toBe(book.hash);
    }
    // one request, counted against the /books limit, asking for all four tokens
    expect(mv.polymarketBookRequests().slice(before)).toEqual([{ atMs: T0, path: '/books', tokens: [...tokens, '123'] }]);
    expect(mv.stats().venues.polymarket.groups?.books.weightUsed).toBeGreaterThanOrEqual(1);
  });

  // Last in the file: it moves the shared manual clock (Limitless wants 300 ms between calls).
  test('limitless SDK: active markets with every Market field, the order book, and the 429 as RateLimitError', async () => {
    const markets = new MarketFetcher(new HttpClient({ baseURL: mv.baseUrl('limitless') }));
    const active = await markets.getActiveMarkets({ limit: 25, page: 1 });
    const want = limitlessMarkets(SEED, 12);
    expect(active.totalMarketsCount).toBe(12);
    expect(active.data.map((m) => m.slug)).toEqual(want.map((m) => m.slug));
    const group = active.data.find((m) => m.marketType === 'group')!;
    expect(group.markets).toHaveLength(2);
    for (const m of [...active.data, ...group.markets!]) {
      expect(m).toMatchObject({ proxyTitle: null, collateralToken: { symbol: 'USDC', decimals: 6 }, creator: { name: 'Limitless' }, priorityIndex: 0 });
      expect(typeof m.createdAt).toBe('string');
      expect(typeof m.updatedAt).toBe('string');
      expect(m.tags.length).toBeGreaterThan(0);
      expect(m.metadata.fee).toBe(true);
    }

    // a second call within 300 ms of the first: the throttler's 429
    const slug = limitlessBookSlugs(want)[0]!;
    const refused = await markets.getOrderBook(slug).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(refused).toMatchObject({ status: 429, data: { statusCode: 429, message: 'ThrottlerException: Too Many Requests' } });

    clock.advance(300);
    const book = await markets.getOrderBook(slug);
    const snap = bookAt('limitless', slug, clock.now(), SEED);
    expect(book.tokenId).toBe(want.find((m) => m.slug === slug)!.tokens!.yes);
    expect(book.bids.map((l) => [l.price, l.size, l.side])).toEqual(snap.bids.map(([p, s]) => [Number(p), rawSize(s), 'BUY']));
    expect(book.asks.map((l) => [l.price, l.size, l.side])).toEqual(snap.asks.map(([p, s]) => [Number(p), rawSize(s), 'SELL']));
    expect(book.minSize).toBe('1000000');
  });
});
