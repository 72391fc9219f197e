import { MalformedPayloadError, RateLimitedError, UnrecoverableError } from '@tickfleet/core';
import { expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { PolygonAdapter, PolygonAuthError, PolygonPlanError, type BeforeRequestInfo, type CandlePage } from '../src/index.js';
import { caught, collect } from './async-helpers.js';

const DAY_MS = 86_400_000;
const SEED = 11;
/** Tuesday 2024-01-16, New York midnight to midnight: a session with pre-market and after-hours bars. */
const SESSION_DAY = Date.UTC(2024, 0, 16, 5);

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
    const fromMs = SESSION_DAY;
    const toMs = fromMs + DAY_MS;
    const pages = await collect(adapter.fetchCandles('AAPL', '1m', fromMs, toMs));
    expect(pages.length).toBeGreaterThan(1);
    const want = expectedCandles('polygon', 'AAPL', '1m', fromMs, toMs, SEED, { holes });
    expect(pages).toHaveLength(Math.ceil(want.length / 400));
    const got = pages.flatMap((p) => p.candles);
    expect(got).toEqual(want);
    expect(new Set(got.map((c) => c.openTime)).size).toBe(got.length);
    expect(before).toEqual(pages.map(() => ({ venue: 'polygon', endpoint: 'aggs', weight: 1 })));
    expect(mock.stats().venues.polygon.requests).toBe(pages.length);
  });

  it('maps the free-tier 429 to RateLimitedError one configured window later', async () => {
    // The emulation's clock stands still, so all three requests fall in one of its minute windows.
    mock = await startMockVenue({
      clock: new ManualClock(Date.now()),
      scenario: { seed: SEED, venues: { polygon: { limit: { requests: 2, windowMs: 60_000 } } } },
    });
    const adapter = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'k', maxCandlesPerPage: 10, rateLimitWindowMs: 60_000 });
    const toMs = SESSION_DAY + DAY_MS;
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

  it('maps key and plan refusals to PolygonAuthError / PolygonPlanError and malformed bodies to MalformedPayloadError', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { polygon: { limit: { enabled: false }, apiKeys: ['k'], historyDays: 365 } } } });
    const toMs = SESSION_DAY + DAY_MS;
    const noKey = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: '' });
    // An empty key is still "no key": the adapter refuses before spending quota.
    expect((await caught(() => collect(noKey.fetchCandles('AAPL', '1h', toMs - DAY_MS, toMs)))) as Error).toHaveProperty('code', 'E_CONFIG');

    const res = await fetch(`${mock.baseUrl('polygon')}/v2/aggs/ticker/AAPL/range/1/hour/${toMs - DAY_MS}/${toMs}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ status: 'ERROR', error: 'API Key was not provided' });
    const unknown = await caught(() =>
      collect(new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'other' }).fetchCandles('AAPL', '1h', toMs - DAY_MS, toMs)),
    );
    expect(unknown).toBeInstanceOf(PolygonAuthError);
    expect(unknown).toMatchObject({ reason: 'unknown-key', venueMessage: 'Unknown API Key' });
    // the plan reaches back a year from now; 2024 is older
    const plan = await caught(() =>
      collect(new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'k' }).fetchCandles('AAPL', '1d', SESSION_DAY, toMs)),
    );
    expect(plan).toBeInstanceOf(PolygonPlanError);
    expect(plan).toMatchObject({ fromMs: SESSION_DAY, toMs, venueCode: 'NOT_AUTHORIZED' });
    mock.patchScenario({ venues: { polygon: { historyDays: 100_000 } } });

    mock.patchScenario({ venues: { polygon: { malformedRate: 1 } } });
    const adapter = new PolygonAdapter({ baseUrl: mock.baseUrl('polygon'), apiKey: 'k' });
    for (let i = 0; i < 4; i++) {
      expect(await caught(() => collect(adapter.fetchCandles('AAPL', '1h', toMs - DAY_MS, toMs)))).toBeInstanceOf(MalformedPayloadError);
    }
    mock.patchScenario({ venues: { polygon: { malformedRate: 0 } } });
    expect(await caught(() => collect(adapter.fetchCandles('not a ticker', '1h', toMs - DAY_MS, toMs)))).toBeInstanceOf(UnrecoverableError);
  });
});
