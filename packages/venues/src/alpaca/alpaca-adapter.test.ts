import { ManualClock } from '@tickfleet/testkit';
import { ConfigError, MalformedPayloadError, RateLimitedError, UnrecoverableError, ValidationError, type AfterResponseInfo } from '@tickfleet/core';
import { caught, collect } from '../../test/async-helpers.js';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { AlpacaAdapter, alpacaUsage } from './alpaca-adapter.js';

const KEYS = { alpacaKeyId: 'PKTESTKEY0000000001', alpacaSecretKey: 'test-secret-0000000000000000000000000001' };
/** 2024-01-04 18:00Z: the sessions of Jan 2 and 3 have closed, Jan 4's is open. */
const NOW = Date.UTC(2024, 0, 4, 18);
const FROM = Date.UTC(2024, 0, 2, 5);
const TO = Date.UTC(2024, 0, 5, 5);

describe('AlpacaAdapter against documented response samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('asks for many symbols in one request, follows next_page_token, sends the keys only as headers', async () => {
    route = (req) => ({
      body: fixture(req.query.get('page_token') ? 'alpaca/bars-last-page.json' : 'alpaca/bars-multi-docs-example.json'),
      headers: { 'X-RateLimit-Limit': '200', 'X-RateLimit-Remaining': '197', 'X-RateLimit-Reset': String(Date.UTC(2024, 0, 4, 18, 1) / 1000) },
    });
    const seen: AfterResponseInfo[] = [];
    const before = server.requests.length;
    const adapter = new AlpacaAdapter({ baseUrl: server.url, ...KEYS, clock: new ManualClock(NOW), hooks: { afterResponse: (i) => void seen.push(i) } });
    const pages = await collect(adapter.fetchCandlesOfSymbols(['AAPL', 'TSLA'], '1d', FROM, TO));
    expect(pages).toHaveLength(2);
    const candles = pages.flatMap((p) => p.candles);
    // the TSLA bar of Jan 2 comes again on the second page: stored once
    expect(candles.map((c) => `${c.symbol}@${new Date(c.openTime).toISOString()}`)).toEqual([
      'AAPL@2024-01-02T05:00:00.000Z',
      'AAPL@2024-01-03T05:00:00.000Z',
      'TSLA@2024-01-02T05:00:00.000Z',
      'TSLA@2024-01-03T05:00:00.000Z',
    ]);
    expect(candles[0]).toEqual({
      venue: 'alpaca',
      symbol: 'AAPL',
      timeframe: '1d',
      openTime: Date.UTC(2024, 0, 2, 5),
      open: '187.15',
      high: '188.44',
      low: '183.885',
      close: '185.64',
      volume: '82488674',
      trades: 1009074,
    });
    expect(pages[0]!.envelopes[0]).toMatchObject({ channel: 'candles', messageId: `alpaca:AAPL:1d:${Date.UTC(2024, 0, 2, 5)}` });
    const reqs = server.requests.slice(before);
    expect(reqs.map((r) => r.path)).toEqual(['/v2/stocks/bars', '/v2/stocks/bars']);
    expect(Object.fromEntries(reqs[0]!.query)).toEqual({
      symbols: 'AAPL,TSLA',
      timeframe: '1Day',
      start: '2024-01-02T05:00:00.000Z',
      // the SIP feed's last 15 minutes are not asked for
      end: '2024-01-04T17:44:59.999Z',
      limit: '10000',
      adjustment: 'raw',
      feed: 'sip',
      sort: 'asc',
    });
    expect(reqs[1]!.query.get('page_token')).toBe('VFNMQXxEfDIwMjQtMDEtMDNUMDU6MDA6MDAuMDAwMDAwMDAwWg==');
    for (const r of reqs) {
      expect(r.headers['apca-api-key-id']).toBe(KEYS.alpacaKeyId);
      expect(r.headers['apca-api-secret-key']).toBe(KEYS.alpacaSecretKey);
      expect(r.url).not.toContain(KEYS.alpacaSecretKey);
    }
    // X-RateLimit-*: 3 of 200 used in the minute ending at the reset
    expect(seen[0]).toMatchObject({ status: 200, usedWeight: 3, usedWeightWindowStartMs: Date.UTC(2024, 0, 4, 18) });
  });

  it("keeps a day bar only once its session's after-hours trading has ended (Alpaca serves today's bar while it changes)", async () => {
    const today = Date.UTC(2024, 0, 4, 5);
    route = () => ({
      body: JSON.stringify({
        bars: { AAPL: [{ t: '2024-01-04T05:00:00Z', o: 1, h: 2, l: 0.5, c: 1.5, v: 10, n: 2, vw: 1.2 }] },
        next_page_token: null,
      }),
    });
    const clock = new ManualClock(NOW);
    const adapter = new AlpacaAdapter({ baseUrl: server.url, ...KEYS, clock });
    expect((await collect(adapter.fetchCandles('AAPL', '1d', today, TO))).flatMap((p) => p.candles)).toEqual([]);
    // The close is not enough: after-hours trades still change the day bar's volume until 20:00 New York.
    clock.set(Date.UTC(2024, 0, 4, 21, 0, 1)); // 16:00:01 New York
    expect((await collect(adapter.fetchCandles('AAPL', '1d', today, TO))).flatMap((p) => p.candles)).toEqual([]);
    clock.set(Date.UTC(2024, 0, 5, 1, 0, 1)); // 20:00:01 New York
    expect((await collect(adapter.fetchCandles('AAPL', '1d', today, TO))).flatMap((p) => p.candles.map((c) => c.openTime))).toEqual([today]);
  });

  it('maps 429 to RateLimitedError at the window end (X-RateLimit-Reset), 403 and 400 to unrecoverable errors, missing keys to ConfigError', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 4, 18, 0, 20));
    route = () => ({ status: 429, body: fixture('alpaca/error-429.json'), headers: { 'X-RateLimit-Limit': '200', 'X-RateLimit-Remaining': '0' } });
    const err = await caught(() => collect(new AlpacaAdapter({ baseUrl: server.url, ...KEYS, clock }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 4, 18, 1));
    expect((err as Error).message).toContain('too many requests.');

    for (const [file, status, message] of [
      ['alpaca/error-403.json', 403, 'forbidden.'],
      ['alpaca/error-403-recent-sip.json', 403, 'subscription does not permit querying recent SIP data'],
      ['alpaca/error-400-limit.json', 400, 'invalid limit: exceeds max limit of 10000'],
    ] as const) {
      route = () => ({ status, body: fixture(file) });
      const rejected = await caught(() => collect(new AlpacaAdapter({ baseUrl: server.url, ...KEYS, clock }).fetchCandles('AAPL', '1m', FROM, TO)));
      expect(rejected).toBeInstanceOf(UnrecoverableError);
      expect((rejected as VenueRejectedError).venueMessage).toBe(message);
      expect(String(rejected)).not.toContain(KEYS.alpacaSecretKey);
    }
    const noKey = await caught(() => collect(new AlpacaAdapter({ baseUrl: server.url, alpacaKeyId: 'PK1' }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect(noKey).toBeInstanceOf(ConfigError);
    expect((noKey as Error).message).toContain('ALPACA_API_SECRET_KEY');
  });

  it('refuses bars of a symbol it did not ask for, a repeated page token, and more than 100 symbols', async () => {
    route = () => ({ body: JSON.stringify({ bars: { MSFT: [] }, next_page_token: null }) });
    const adapter = new AlpacaAdapter({ baseUrl: server.url, ...KEYS, clock: new ManualClock(NOW) });
    expect(await caught(() => collect(adapter.fetchCandles('AAPL', '1d', FROM, TO)))).toBeInstanceOf(MalformedPayloadError);
    route = () => ({ body: JSON.stringify({ bars: {}, next_page_token: 'same' }) });
    expect(await caught(() => collect(adapter.fetchCandles('AAPL', '1d', FROM, TO)))).toBeInstanceOf(MalformedPayloadError);
    const many = Array.from({ length: 101 }, (_, i) => `S${i}`);
    expect(await caught(() => collect(adapter.fetchCandlesOfSymbols(many, '1d', FROM, TO)))).toBeInstanceOf(ValidationError);
    expect(await caught(() => collect(adapter.fetchCandles('AAPL', '5m', FROM, TO)))).toBeInstanceOf(ValidationError);
    expect(() => new AlpacaAdapter({ baseUrl: server.url, ...KEYS, alpacaFeed: 'otc' as 'sip' })).toThrow(ValidationError);
  });

  it('reads the usage headers, and nothing from garbled ones', () => {
    const h = (limit: string, remaining: string, reset: string): Headers =>
      new Headers({ 'X-RateLimit-Limit': limit, 'X-RateLimit-Remaining': remaining, 'X-RateLimit-Reset': reset });
    expect(alpacaUsage(h('200', '150', '1704391260'), 60_000)).toEqual({ usedWeight: 50, windowStartMs: 1704391200000 });
    expect(alpacaUsage(h('200', '201', '1704391260'), 60_000)).toBeUndefined();
    expect(alpacaUsage(h('200', 'x', '1704391260'), 60_000)).toBeUndefined();
    expect(alpacaUsage(new Headers(), 60_000)).toBeUndefined();
  });
});
