import { ManualClock } from '@tickfleet/testkit';
import { ConfigError, MalformedPayloadError, RateLimitedError, UnrecoverableError, type AfterResponseInfo } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import { caught } from '../../test/async-helpers.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { FinnhubAdapter, newYorkLocalMs, rateLimitUsage } from './finnhub-adapter.js';

const LIMIT_HEADERS = { 'X-Ratelimit-Limit': '60', 'X-Ratelimit-Remaining': '57', 'X-Ratelimit-Reset': String(Date.UTC(2022, 4, 27, 20, 31) / 1000) };

describe('FinnhubAdapter against documented response samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('turns every call and put of every expiration into one contract record, the key only in the X-Finnhub-Token header', async () => {
    route = () => ({ body: fixture('finnhub/option-chain-docs-example.json'), headers: LIMIT_HEADERS });
    const seen: AfterResponseInfo[] = [];
    const adapter = new FinnhubAdapter({ baseUrl: server.url, finnhubApiKey: 'KEY1', hooks: { afterResponse: (i) => void seen.push(i) } });
    const before = server.requests.length;
    const snap = await adapter.fetchOptionChain('AAPL');
    const req = server.requests[before]!;
    expect(req.path).toBe('/api/v1/stock/option-chain');
    expect(Object.fromEntries(req.query)).toEqual({ symbol: 'AAPL' });
    expect(req.headers['x-finnhub-token']).toBe('KEY1');

    // 16:30:11 in New York on 2022-05-27 (EDT, UTC-4).
    const quoteTimeMs = Date.UTC(2022, 4, 27, 20, 30, 11);
    expect(snap.contracts).toEqual([
      {
        venue: 'finnhub',
        symbol: 'AAPL',
        contract: 'AAPL220603C00050000',
        side: 'call',
        expiration: '2022-06-03',
        strike: '50',
        quoteTimeMs,
        bid: '99.35',
        ask: '99.95',
        last: '98.75',
        volume: 1,
        openInterest: 0,
        impliedVolatility: '389.6484',
        delta: '0.9964',
        gamma: '0.0001',
        theta: '-0.1073',
        vega: '0.0003',
        rho: '0.0024',
      },
      expect.objectContaining({ contract: 'AAPL220603P00050000', side: 'put', bid: '0', gamma: null, rho: null, openInterest: 5243 }),
    ]);
    expect(snap.envelopes.map((e) => [e.channel, e.symbol, e.messageId, e.serverTimeMs])).toEqual([
      ['options', 'AAPL', `finnhub:AAPL220603C00050000:${quoteTimeMs}`, quoteTimeMs],
      ['options', 'AAPL', `finnhub:AAPL220603P00050000:${quoteTimeMs}`, quoteTimeMs],
    ]);
    // The same chain fetched again is the same snapshot: the same keys.
    const again = await adapter.fetchOptionChain('AAPL');
    expect(again.envelopes.map((e) => e.messageId)).toEqual(snap.envelopes.map((e) => e.messageId));
    // X-Ratelimit-* feed the budget like Binance's used-weight header: 3 used in the minute ending at Reset.
    expect(seen[0]).toMatchObject({ endpoint: 'optionChain', status: 200, usedWeight: 3, usedWeightWindowStartMs: Date.UTC(2022, 4, 27, 20, 30) });
  });

  it('maps 429 to RateLimitedError at the end of the aligned minute, 401 to an unrecoverable error, a missing key to ConfigError', async () => {
    route = () => ({ status: 429, body: fixture('finnhub/error-429.json'), headers: { ...LIMIT_HEADERS, 'X-Ratelimit-Remaining': '0' } });
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 12, 0, 20));
    const err = await caught(() => new FinnhubAdapter({ baseUrl: server.url, finnhubApiKey: 'k', clock }).fetchOptionChain('AAPL'));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1, 12, 1));
    expect((err as Error).message).toContain('API limit reached');

    route = () => ({ status: 401, body: fixture('finnhub/error-401.json') });
    const bad = await caught(() => new FinnhubAdapter({ baseUrl: server.url, finnhubApiKey: 'SecretKey123' }).fetchOptionChain('AAPL'));
    expect(bad).toBeInstanceOf(UnrecoverableError);
    expect((bad as VenueRejectedError).venueMessage).toBe('Invalid API key');
    expect(String((bad as Error).message)).not.toContain('SecretKey123');
    expect(await caught(() => new FinnhubAdapter({ baseUrl: server.url }).fetchOptionChain('AAPL'))).toBeInstanceOf(ConfigError);
  });

  it('holds each request slot long enough that the fleet stays under 90 % of the 30/s cap', async () => {
    route = () => ({ body: '{"code":"ZZZ","data":[]}' });
    expect(new FinnhubAdapter({ baseUrl: server.url, maxInflight: 2 }).slotHoldMs).toBe(75);
    const adapter = new FinnhubAdapter({ baseUrl: server.url, finnhubApiKey: 'k', maxInflight: 3 });
    const started = performance.now();
    for (let i = 0; i < 3; i++) expect((await adapter.fetchOptionChain('ZZZ')).contracts).toEqual([]);
    // Three requests in one slot take at least three holds of 112 ms: at most 9 per second per slot, 27 for the three slots.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * adapter.slotHoldMs - 5);
  });

  it('refuses a chain of another underlier or of a wrong shape', async () => {
    const adapter = new FinnhubAdapter({ baseUrl: server.url, finnhubApiKey: 'k' });
    route = () => ({ body: fixture('finnhub/option-chain-docs-example.json') });
    expect(await caught(() => adapter.fetchOptionChain('MSFT'))).toBeInstanceOf(MalformedPayloadError);
    route = () => ({ body: '{"code":"AAPL","data":[{"expirationDate":"2022-06-03","options":{"CALL":[{"contractName":"X","type":"CALL"}]}}]}' });
    expect(await caught(() => adapter.fetchOptionChain('AAPL'))).toBeInstanceOf(MalformedPayloadError);
  });

  it('reads Finnhub times as New York wall time across DST, and the limit headers only when whole', () => {
    expect(newYorkLocalMs('2024-01-15 09:30:00')).toBe(Date.UTC(2024, 0, 15, 14, 30));
    expect(newYorkLocalMs('2024-07-15 09:30:00')).toBe(Date.UTC(2024, 6, 15, 13, 30));
    expect(newYorkLocalMs('2024-07-15T09:30:00')).toBeUndefined();
    expect(rateLimitUsage(new Headers({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '10', 'x-ratelimit-reset': '1700000040' }))).toEqual({
      usedWeight: 50,
      windowStartMs: 1_699_999_980_000,
    });
    expect(rateLimitUsage(new Headers({ 'x-ratelimit-limit': '60' }))).toBeUndefined();
  });
});
