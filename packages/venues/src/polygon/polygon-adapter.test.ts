import { ManualClock } from '@tickfleet/testkit';
import { ConfigError, MalformedPayloadError, RateLimitedError, UnrecoverableError, ValidationError } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { CandlePage } from '../types.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { PolygonAdapter } from './polygon-adapter.js';
import { PolygonAuthError } from './polygon-auth-error.js';
import { PolygonPlanError } from './polygon-plan-error.js';
import { caught, collect } from '../../test/async-helpers.js';

describe('PolygonAdapter against documented response samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  const FROM = Date.UTC(2020, 0, 1);
  const TO = Date.UTC(2020, 0, 11);

  it('follows next_url with the key re-attached and converts bars to candles', async () => {
    route = (req, s) => {
      if (req.query.get('cursor')) return { body: fixture('polygon/aggs-last-page.json') };
      return { body: fixture('polygon/aggs-docs-example.json').replace('https://api.polygon.io', s.url) };
    };
    const before = server.requests.length;
    const adapter = new PolygonAdapter({ baseUrl: server.url, apiKey: 'KEY1' });
    const pages = await collect(adapter.fetchCandles('AAPL', '1d', FROM, TO));
    expect(pages).toHaveLength(2);
    const candles = pages.flatMap((p) => p.candles);
    expect(candles.map((c) => c.openTime)).toEqual([1577941200000, 1578027600000, 1578114000000]);
    expect(candles[0]).toEqual({
      venue: 'polygon',
      symbol: 'AAPL',
      timeframe: '1d',
      openTime: 1577941200000,
      open: '74.06',
      high: '75.15',
      low: '73.7975',
      close: '75.0875',
      volume: '135647456',
      trades: 1,
    });
    expect(pages[0]!.envelopes[0]).toMatchObject({ channel: 'candles', messageId: 'polygon:AAPL:1d:1577941200000' });
    const reqs = server.requests.slice(before);
    expect(reqs[0]!.path).toBe(`/v2/aggs/ticker/AAPL/range/1/day/${FROM}/${TO - 1}`);
    expect(Object.fromEntries(reqs[0]!.query)).toEqual({ adjusted: 'true', sort: 'asc', limit: '5000', apiKey: 'KEY1' });
    expect(reqs[1]!.path).toBe('/v2/aggs/ticker/AAPL/range/1/day/1578114000000/2020-01-10');
    expect(reqs[1]!.query.get('cursor')).toBe('bGltaXQ9MiZzb3J0PWFzYw');
    expect(reqs[1]!.query.get('apiKey')).toBe('KEY1');
  });

  it('refuses a next_url on another origin, so the API key never leaves the venue', async () => {
    route = () => ({ body: fixture('polygon/aggs-docs-example.json') });
    const adapter = new PolygonAdapter({ baseUrl: server.url, apiKey: 'KEY1' });
    const seen: CandlePage[] = [];
    const err = await caught(async () => {
      for await (const p of adapter.fetchCandles('AAPL', '1d', FROM, TO)) seen.push(p);
    });
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect(seen).toHaveLength(1); // the first page was still delivered
  });

  it('maps the 429 body to RateLimitedError one window later (no Retry-After)', async () => {
    route = () => ({ status: 429, body: fixture('polygon/error-429.json') });
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 12));
    const adapter = new PolygonAdapter({ baseUrl: server.url, apiKey: 'k', clock, rateLimitWindowMs: 10_000 });
    const err = await caught(() => collect(adapter.fetchCandles('AAPL', '1m', FROM, TO)));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1, 12) + 10_000);
    expect((err as Error).message).toContain("You've exceeded the maximum requests per minute");
  });

  it('maps 401 (unknown or missing key) to PolygonAuthError, 403 NOT_AUTHORIZED to PolygonPlanError, and a missing key option to ConfigError', async () => {
    route = () => ({ status: 401, body: fixture('polygon/error-401.json') });
    const err = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url, apiKey: 'bad-key-1234' }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect(err).toBeInstanceOf(PolygonAuthError);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as PolygonAuthError).reason).toBe('unknown-key');
    expect((err as VenueRejectedError).venueMessage).toBe('Unknown API Key');
    expect((err as Error).message).not.toContain('bad-key-1234');
    route = () => ({ status: 401, body: fixture('polygon/error-401-no-key.json') });
    const noKey = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url, apiKey: 'k' }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect((noKey as PolygonAuthError).reason).toBe('missing-key');
    route = () => ({ status: 403, body: fixture('polygon/error-403-plan.json') });
    const plan = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url, apiKey: 'k' }).fetchCandles('AAPL', '1d', FROM, TO)));
    expect(plan).toBeInstanceOf(PolygonPlanError);
    expect(plan).toMatchObject({ fromMs: FROM, toMs: TO, status: 403, venueCode: 'NOT_AUTHORIZED', retryable: false });
    expect((plan as Error).message).toBe(
      "polygon rejected the request with HTTP 403 code NOT_AUTHORIZED: Your plan doesn't include this data timeframe. Please upgrade your plan at https://polygon.io/pricing (requested 2020-01-01T00:00:00.000Z to 2020-01-11T00:00:00.000Z)",
    );
    const err2 = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect(err2).toBeInstanceOf(ConfigError);
  });

  it('drops bars outside the range or still open, and tolerates a page without results', async () => {
    const now = Date.UTC(2024, 0, 1, 0, 3, 30);
    route = () => ({
      body: JSON.stringify({
        ticker: 'AAPL',
        status: 'OK',
        results: [0, 1, 2, 3, 4].map((i) => ({ o: 1, h: 2, l: 0.5, c: 1.5, v: 1e-7, t: Date.UTC(2024, 0, 1, 0, i) })),
      }),
    });
    const adapter = new PolygonAdapter({ baseUrl: server.url, apiKey: 'k', clock: new ManualClock(now) });
    const candles = (await collect(adapter.fetchCandles('AAPL', '1m', Date.UTC(2024, 0, 1, 0, 1), Date.UTC(2024, 0, 1, 1)))).flatMap((p) => p.candles);
    expect(candles.map((c) => c.openTime)).toEqual([1, 2].map((i) => Date.UTC(2024, 0, 1, 0, i)));
    expect(candles[0]!.volume).toBe('0.0000001');
    route = () => ({ body: '{"ticker":"AAPL","queryCount":0,"resultsCount":0,"adjusted":true,"status":"OK","request_id":"x"}' });
    expect(await collect(adapter.fetchCandles('AAPL', '1m', Date.UTC(2024, 0, 1, 0, 1), Date.UTC(2024, 0, 1, 1)))).toEqual([]);
  });

  it('keeps a day bar (New York midnight) only once its session is over, including after-hours trading', async () => {
    // Wednesday 2024-01-17 (winter: New York midnight is 05:00Z); its after-hours trading ends 01:00Z on the 18th
    const bars = [16, 17].map((d) => ({ o: 1, h: 2, l: 0.5, c: 1.5, v: 10, t: Date.UTC(2024, 0, d, 5) }));
    route = () => ({ body: JSON.stringify({ ticker: 'AAPL', status: 'OK', results: bars }) });
    const clock = new ManualClock(Date.UTC(2024, 0, 17, 21, 30)); // 16:30 New York: closed, after-hours still trading
    const adapter = new PolygonAdapter({ baseUrl: server.url, apiKey: 'k', clock });
    const days = async (): Promise<number[]> =>
      (await collect(adapter.fetchCandles('AAPL', '1d', Date.UTC(2024, 0, 16), Date.UTC(2024, 0, 19)))).flatMap((p) => p.candles.map((c) => c.openTime));
    expect(await days()).toEqual([Date.UTC(2024, 0, 16, 5)]);
    clock.set(Date.UTC(2024, 0, 18, 1)); // 20:00 New York
    expect(await days()).toEqual([Date.UTC(2024, 0, 16, 5), Date.UTC(2024, 0, 17, 5)]);
  });

  it('refuses 1w (Polygon weeks start Sunday in New York, off the tickfleet grid) with a ValidationError', async () => {
    const err = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url, apiKey: 'k' }).fetchCandles('AAPL', '1w', FROM, TO)));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain('1w');
  });

  it('yields MalformedPayloadError for a wrong shape', async () => {
    route = () => ({ body: '{"status":"OK","results":[{"o":"x"}]}' });
    const err = await caught(() => collect(new PolygonAdapter({ baseUrl: server.url, apiKey: 'k' }).fetchCandles('AAPL', '1m', FROM, TO)));
    expect(err).toBeInstanceOf(MalformedPayloadError);
  });
});
