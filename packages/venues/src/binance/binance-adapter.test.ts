import { ManualClock } from '@tickfleet/testkit';
import { BannedError, candleKey, MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError, type Candle } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { AfterResponseInfo, BeforeRequestInfo } from '../types.js';
import { VenueRejectedError } from '../venue-rejected-error.js';
import { BinanceAdapter } from './binance-adapter.js';
import { binanceDepthWeight } from './binance-weights.js';
import { caught, collect } from '../../test/async-helpers.js';

describe('BinanceAdapter against documented response samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('parses klines, sends startTime/endTime/limit, reports weight 2 and X-MBX-USED-WEIGHT-1M', async () => {
    route = (req) => (req.path === '/api/v3/klines' ? { body: fixture('binance/klines-1m.json'), headers: { 'X-MBX-USED-WEIGHT-1M': '42' } } : undefined);
    const before: BeforeRequestInfo[] = [];
    const after: AfterResponseInfo[] = [];
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 20));
    const adapter = new BinanceAdapter({
      baseUrl: `${server.url}/`,
      clock,
      hooks: { beforeRequest: async (i) => void before.push(i), afterResponse: (i) => void after.push(i) },
    });
    const from = 1624559520000;
    const pages = await collect(adapter.fetchCandles('BTC/USDT', '1m', from, from + 3 * 60_000));
    expect(pages).toHaveLength(1);
    const candles = pages[0]!.candles;
    expect(candles.map((c) => c.openTime)).toEqual([from, from + 60_000, from + 120_000]);
    expect(candles[0]).toEqual<Candle>({
      venue: 'binance',
      symbol: 'BTC/USDT',
      timeframe: '1m',
      openTime: 1624559520000,
      open: '34970.90000000',
      high: '35047.03000000',
      low: '34800.01000000',
      close: '35047.03000000',
      volume: '0.41947200',
      trades: 37,
    });
    const env = pages[0]!.envelopes[0]!;
    expect(env).toMatchObject({
      v: 1,
      channel: 'candles',
      venue: 'binance',
      symbol: 'BTC/USDT',
      messageId: candleKey(candles[0]!),
      serverTimeMs: 1624559579999,
    });
    expect(env.payload).toEqual(candles[0]);
    const q = server.requests.at(-1)!.query;
    expect(Object.fromEntries(q)).toEqual({ symbol: 'BTCUSDT', interval: '1m', startTime: String(from), endTime: String(from + 180_000 - 1), limit: '3' });
    expect(before).toEqual([{ venue: 'binance', endpoint: 'klines', weight: 2 }]);
    expect(after).toEqual([{ venue: 'binance', endpoint: 'klines', status: 200, latencyMs: 0, usedWeight: 42, usedWeightWindowStartMs: Date.UTC(2024, 0, 1) }]);
  });

  it('parses the documented klines example row', async () => {
    route = () => ({ body: fixture('binance/klines-docs-example.json') });
    const adapter = new BinanceAdapter({ baseUrl: server.url, maxCandlesPerPage: 10 });
    const pages = await collect(adapter.fetchCandles('LTC/BTC', '1d', 1499040000000, 1499040000000 + 86_400_000 * 30));
    expect(pages.flatMap((p) => p.candles)).toEqual([
      expect.objectContaining({ symbol: 'LTC/BTC', timeframe: '1d', openTime: 1499040000000, open: '0.01634790', volume: '148976.11427815', trades: 308 }),
    ]);
  });

  it('drops candles whose closeTime is not yet past and never asks beyond the last closed candle', async () => {
    const now = Date.UTC(2024, 0, 1, 0, 5, 30);
    const rows = [0, 1, 2, 3, 4, 5].map((i) => {
      const open = Date.UTC(2024, 0, 1, 0, i);
      return [open, '1', '1', '1', '1', '1', open + 59_999, '1', 1, '1', '1', '0'];
    });
    route = (req) => {
      const start = Number(req.query.get('startTime'));
      const end = Number(req.query.get('endTime'));
      return { body: JSON.stringify(rows.filter((r) => (r[0] as number) >= start && (r[0] as number) <= end)) };
    };
    const adapter = new BinanceAdapter({ baseUrl: server.url, clock: new ManualClock(now) });
    const pages = await collect(adapter.fetchCandles('BTC/USDT', '1m', Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1, 1)));
    expect(pages.flatMap((p) => p.candles).map((c) => c.openTime)).toEqual([0, 1, 2, 3, 4].map((i) => Date.UTC(2024, 0, 1, 0, i)));
    expect(server.requests.at(-1)!.query.get('endTime')).toBe(String(Date.UTC(2024, 0, 1, 0, 4)));

    // Time moves on while the request is in flight the other way round (a clock step back): the
    // candle the venue returns as closed is not closed by our clock, so it is dropped, not stored.
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 6, 10));
    route = (req) => {
      clock.set(now);
      const start = Number(req.query.get('startTime'));
      const end = Number(req.query.get('endTime'));
      return { body: JSON.stringify(rows.filter((r) => (r[0] as number) >= start && (r[0] as number) <= end)) };
    };
    const pages2 = await collect(
      new BinanceAdapter({ baseUrl: server.url, clock }).fetchCandles('BTC/USDT', '1m', Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1, 1)),
    );
    expect(server.requests.at(-1)!.query.get('endTime')).toBe(String(Date.UTC(2024, 0, 1, 0, 5)));
    expect(pages2.flatMap((p) => p.candles).map((c) => c.openTime)).toEqual([0, 1, 2, 3, 4].map((i) => Date.UTC(2024, 0, 1, 0, i)));

    // Rows past the requested endTime are refused as malformed rather than stored.
    route = () => ({ body: JSON.stringify(rows) });
    const err = await caught(() =>
      collect(
        new BinanceAdapter({ baseUrl: server.url, clock: new ManualClock(now) }).fetchCandles('BTC/USDT', '1m', Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1, 1)),
      ),
    );
    expect(err).toBeInstanceOf(MalformedPayloadError);
  });

  it('pages with startTime = last openTime + interval and stops on a short page', async () => {
    const base = Date.UTC(2023, 5, 1);
    const all = Array.from({ length: 25 }, (_, i) => base + i * 60_000).filter((t) => t !== base + 7 * 60_000); // one venue hole
    route = (req) => {
      const start = Number(req.query.get('startTime'));
      const end = Number(req.query.get('endTime'));
      const limit = Number(req.query.get('limit'));
      const hit = all.filter((t) => t >= start && t <= end).slice(0, limit);
      return { body: JSON.stringify(hit.map((t) => [t, '1.0', '2.0', '0.5', '1.5', '10', t + 59_999, '15', 3, '5', '7.5', '0'])) };
    };
    const adapter = new BinanceAdapter({ baseUrl: server.url, maxCandlesPerPage: 10 });
    const before = server.requests.length;
    const pages = await collect(adapter.fetchCandles('ETH/BTC', '1m', base, base + 25 * 60_000));
    const times = pages.flatMap((p) => p.candles.map((c) => c.openTime));
    expect(times).toEqual(all);
    expect(new Set(times).size).toBe(times.length);
    const starts = server.requests.slice(before).map((r) => Number(r.query.get('startTime')));
    expect(starts).toEqual([base, base + 11 * 60_000, base + 21 * 60_000]);
  });

  it('maps 429 + Retry-After to RateLimitedError at the window end', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 29, 400));
    route = () => ({ status: 429, headers: { 'Retry-After': '31', 'X-MBX-USED-WEIGHT-1M': '6004' }, body: fixture('binance/error-429.json') });
    const after: AfterResponseInfo[] = [];
    const adapter = new BinanceAdapter({ baseUrl: server.url, clock, hooks: { afterResponse: (i) => void after.push(i) } });
    const err = await caught(() => collect(adapter.fetchCandles('BTC/USDT', '1m', Date.UTC(2023, 0, 1), Date.UTC(2023, 0, 2))));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).code).toBe('E_RATE_LIMITED');
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1, 0, 1));
    expect((err as Error).message).toContain('-1003');
    expect(after[0]).toMatchObject({ status: 429, usedWeight: 6004 });

    // A Retry-After that does not match the aligned window is taken as given.
    route = () => ({ status: 429, headers: { 'Retry-After': '5' }, body: fixture('binance/error-429.json') });
    const err2 = await caught(() => adapter.fetchBook('BTC/USDT'));
    expect((err2 as RateLimitedError).retryAtMs).toBe(clock.now() + 5000);
  });

  it('maps 418 to BannedError carrying the ban end from the body, else from Retry-After', async () => {
    const clock = new ManualClock(Date.UTC(2023, 10, 14, 22, 0));
    route = () => ({ status: 418, headers: { 'Retry-After': '120' }, body: fixture('binance/error-418.json') });
    const adapter = new BinanceAdapter({ baseUrl: server.url, clock });
    const err = await caught(() => adapter.listInstruments());
    expect(err).toBeInstanceOf(BannedError);
    expect((err as BannedError).bannedUntilMs).toBe(1700000000000);

    route = () => ({ status: 418, headers: { 'Retry-After': '120' }, body: '<html>teapot</html>' });
    const err2 = await caught(() => adapter.listInstruments());
    expect((err2 as BannedError).bannedUntilMs).toBe(clock.now() + 120_000);
  });

  it('maps invalid symbol / interval 400s to unrecoverable errors with the venue code', async () => {
    const adapter = new BinanceAdapter({ baseUrl: server.url });
    route = () => ({ status: 400, body: fixture('binance/error-invalid-symbol.json') });
    const err = await caught(() => adapter.fetchBook('NOPE/USDT'));
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err).toBeInstanceOf(VenueRejectedError);
    expect((err as VenueRejectedError).venueCode).toBe(-1121);
    expect((err as VenueRejectedError).venueMessage).toBe('Invalid symbol.');
    expect((err as VenueRejectedError).status).toBe(400);
    route = () => ({ status: 400, body: fixture('binance/error-invalid-interval.json') });
    const err2 = await caught(() => collect(adapter.fetchCandles('BTC/USDT', '1m', 0, 60_000)));
    expect((err2 as VenueRejectedError).venueCode).toBe(-1120);
  });

  it('maps 5xx to TransientError', async () => {
    route = () => ({ status: 503, body: 'Service Unavailable' });
    const err = await caught(() => new BinanceAdapter({ baseUrl: server.url }).fetchBook('BTC/USDT'));
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).status).toBe(503);
  });

  it.each([
    ['not JSON', '<html>502 Bad Gateway</html>'],
    ['wrong shape', '{"lastUpdateId":"x"}'],
    ['price not a decimal', '{"lastUpdateId":1,"bids":[["abc","1"]],"asks":[]}'],
    ['huge garbage', 'x'.repeat(100_000)],
  ])('yields MalformedPayloadError with a truncated sample for %s depth', async (_what, body) => {
    route = () => ({ body });
    const err = await caught(() => new BinanceAdapter({ baseUrl: server.url }).fetchBook('BTC/USDT'));
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect((err as MalformedPayloadError).sample.length).toBeLessThanOrEqual(201);
  });

  it('rejects kline rows with a wrong shape', async () => {
    route = () => ({ body: '[[1499040000000,"0.1","0.2"]]' });
    const err = await caught(() => collect(new BinanceAdapter({ baseUrl: server.url }).fetchCandles('BTC/USDT', '1m', 1499040000000, 1499040060000)));
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect((err as Error).message).toMatch(/klines/);
  });

  it('parses the depth example into a book snapshot with lastUpdateId as sequence, weight by limit', async () => {
    route = (req) => (req.path === '/api/v3/depth' ? { body: fixture('binance/depth-docs-example.json') } : undefined);
    const before: BeforeRequestInfo[] = [];
    const adapter = new BinanceAdapter({ baseUrl: server.url, depthLimit: 500, hooks: { beforeRequest: async (i) => void before.push(i) } });
    const { book, envelope } = await adapter.fetchBook('LTC/BTC');
    expect(book).toMatchObject({
      venue: 'binance',
      symbol: 'LTC/BTC',
      sequence: 1027024,
      bids: [['4.00000000', '431.00000000']],
      asks: [['4.00000200', '12.00000000']],
    });
    expect(envelope).toMatchObject({ channel: 'book', sequence: 1027024, messageId: 'binance:LTCBTC:depth:1027024' });
    expect(server.requests.at(-1)!.query.get('limit')).toBe('500');
    expect(before).toEqual([{ venue: 'binance', endpoint: 'depth', weight: 25 }]);
    expect([5, 100, 101, 500, 501, 1000, 1001, 5000].map(binanceDepthWeight)).toEqual([5, 5, 25, 25, 50, 50, 250, 250]);
  });

  it('at depth 1 polls top of book from ticker/bookTicker: many symbols at weight 4, one at weight 2', async () => {
    const tickers: Record<string, object> = {
      BTCUSDT: { symbol: 'BTCUSDT', bidPrice: '42000.10000000', bidQty: '0.50000000', askPrice: '42000.20000000', askQty: '1.25000000' },
      ETHUSDT: { symbol: 'ETHUSDT', bidPrice: '0.00000000', bidQty: '0.00000000', askPrice: '2500.00000000', askQty: '3.00000000' },
    };
    route = (req) => {
      if (req.path !== '/api/v3/ticker/bookTicker') return undefined;
      const one = req.query.get('symbol');
      if (one) return { body: JSON.stringify(tickers[one]) };
      return { body: JSON.stringify((JSON.parse(req.query.get('symbols')!) as string[]).map((s) => tickers[s]).filter(Boolean)) };
    };
    const before: BeforeRequestInfo[] = [];
    const adapter = new BinanceAdapter({ baseUrl: server.url, depthLimit: 1, hooks: { beforeRequest: async (i) => void before.push(i) } });
    expect(adapter.maxBooksPerRequest).toBe(100);
    expect(new BinanceAdapter({ baseUrl: server.url }).maxBooksPerRequest).toBe(1);
    const batch = await adapter.fetchBooks(['BTC/USDT', 'ETH/USDT', 'SOL/USDT']);
    expect(JSON.parse(server.requests.at(-1)!.query.get('symbols')!)).toEqual(['BTCUSDT', 'ETHUSDT', 'SOLUSDT']);
    expect(batch.weight).toBe(4);
    expect(batch.missing).toEqual(['SOL/USDT']);
    expect(batch.books.map((b) => [b.book.symbol, b.book.bids, b.book.asks])).toEqual([
      ['BTC/USDT', [['42000.10000000', '0.50000000']], [['42000.20000000', '1.25000000']]],
      // an empty side is printed as zero price and quantity
      ['ETH/USDT', [], [['2500.00000000', '3.00000000']]],
    ]);
    const { book } = await adapter.fetchBook('BTC/USDT');
    expect(book.bids).toEqual([['42000.10000000', '0.50000000']]);
    expect(before.map((b) => [b.endpoint, b.weight])).toEqual([
      ['bookTickers', 4],
      ['bookTicker', 2],
    ]);
    await expect(adapter.fetchBooks(Array.from({ length: 101 }, (_, i) => `X${i}/USDT`))).rejects.toThrow(/1 to 100 symbols/);
  });

  it('discovers TRADING symbols from exchangeInfo and maps symbols both ways', async () => {
    route = () => ({ body: fixture('binance/exchange-info.json') });
    const adapter = new BinanceAdapter({ baseUrl: server.url });
    expect(adapter.fromVenueSymbol('BTCUSDT')).toBe('BTC/USDT');
    expect(adapter.fromVenueSymbol('1000SATSFDUSD')).toBe('1000SATS/FDUSD');
    expect(adapter.toVenueSymbol('BTC/USDT')).toBe('BTCUSDT');
    const instruments = await adapter.listInstruments();
    expect(instruments.map((i) => [i.symbol, i.venueSymbol])).toEqual([
      ['ETH/BTC', 'ETHBTC'],
      ['1000SATS/FDUSD', '1000SATSFDUSD'],
    ]);
    // exchangeInfo teaches pairs the suffix list cannot split.
    expect(adapter.fromVenueSymbol('LUNAUST')).toBe('LUNA/UST');
    expect(adapter.weights).toEqual({ klines: 2, depth: 5, exchangeInfo: 20, aggTrades: 4, historicalTrades: 25, bookTicker: 2, bookTickers: 4 });
  });
});
