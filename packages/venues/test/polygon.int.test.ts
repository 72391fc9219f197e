import { MalformedPayloadError, RateLimitedError, UnrecoverableError } from '@tickfleet/core';
import { expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { PolygonAdapter, type BeforeRequestInfo, type CandlePage } from '../src/index.js';
import { caught, collect } from './async-helpers.js';

const DAY_MS = 86_400_000;
const SEED = 11;

describe('PolygonAdapter against the polygon emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  it('follows next_url across pages: every bar exactly once, equal to expectedCandles', async () => {
    const holes = { rate: 0.02 };
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polygon: { limit: { requests: 100 }, holes } } } });
    const before: BeforeRequestInfo[] = [];
    const adapter = new PolygonAdapter({
      baseUrl: mock.baseUrl('polygon'),
      apiKey: 'test-key',
      maxCandlesPerPage: 400,
      hooks: { beforeRequest: async (i) => void before.push(i) },
    });
    const toMs = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS;
    const fromMs = toMs - DAY_MS;
    const pages = await collect(adapter.fetchCandles('AAPL', '1m', fromMs, toMs));
    const want = expectedCandles('polygon', 'AAPL', '1m', fromMs, toMs, SEED, { holes });
    expect(pages).toHaveLength(Math.ceil(want.length / 400));
    const got = pages.flatMap((p) => p.candles);
    expect(got).toEqual(want);
    expect(new Set(got.map((c) => c.openTime)).size).toBe(got.length);
    expect(before).toEqual(pages.map(() => ({ venue: 'polygon', endpoint: 'aggs', weight: 1 })));
    expect(mock.stats().venues.polygon.requests).toBe(pages.length);
  });

  it('maps the free-tier 429 to RateLimitedError one configured window later', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polygon: { limit: { requests: 2, windowMs: 60_000 } } } } });
    const adapter = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'k', maxCandlesPerPage: 10, rateLimitWindowMs: 60_000 });
    const toMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const pages: CandlePage[] = [];
    const t0 = Date.now();
    const err = await caught(async () => {
      for await (const p of adapter.fetchCandles('MSFT', '1m', toMs - DAY_MS, toMs)) pages.push(p);
    });
    expect(pages).toHaveLength(2); // the two allowed requests were delivered before the limit hit
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAtMs).toBeGreaterThanOrEqual(t0 + 60_000);
    expect((err as RateLimitedError).retryAtMs).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('maps a missing key to 401 Unknown API Key (unrecoverable) and malformed bodies to MalformedPayloadError', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polygon: { limit: { enabled: false } } } } });
    const toMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const noKey = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: '' });
    // An empty key is still "no key": the adapter refuses before spending quota.
    expect((await caught(() => collect(noKey.fetchCandles('AAPL', '1h', toMs - DAY_MS, toMs)))) as Error).toHaveProperty('code', 'E_CONFIG');

    const res = await fetch(`${mock.baseUrl('polygon')}/v2/aggs/ticker/AAPL/range/1/hour/${toMs - DAY_MS}/${toMs}`);
    expect(res.status).toBe(401);

    mock.patchScenario({ venues: { polygon: { malformedRate: 1 } } });
    const adapter = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'k' });
    for (let i = 0; i < 4; i++) {
      expect(await caught(() => collect(adapter.fetchCandles('AAPL', '1h', toMs - DAY_MS, toMs)))).toBeInstanceOf(MalformedPayloadError);
    }
    mock.patchScenario({ venues: { polygon: { malformedRate: 0 } } });
    expect(await caught(() => collect(adapter.fetchCandles('not a ticker', '1h', toMs - DAY_MS, toMs)))).toBeInstanceOf(UnrecoverableError);
  });
});
