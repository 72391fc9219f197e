import { ManualClock } from '@tickfleet/testkit';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { FINNHUB_BURST_PER_SECOND } from './finnhub-emulation.js';
import { FINNHUB_EXPIRATIONS, FINNHUB_STRIKES } from './finnhub-options.js';

// Friday 2024-01-19, 15:00:20 UTC (10:00:20 in New York).
const NOW = Date.UTC(2024, 0, 19, 15, 0, 20);

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; json: () => any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: () => JSON.parse(text) };
}

describe('finnhub emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let chain: (symbol: string, auth?: 'query' | 'header' | 'none') => ReturnType<typeof get>;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    mv = await startMockVenue({ clock });
    const base = mv.baseUrl('finnhub');
    chain = (symbol, auth = 'query') =>
      get(
        `${base}/api/v1/stock/option-chain?symbol=${symbol}${auth === 'query' ? '&token=k' : ''}`,
        auth === 'header' ? { headers: { 'X-Finnhub-Token': 'k' } } : {},
      );
  });
  afterEach(() => mv.stop());

  test('option chain: documented shape, token in the query or the header, limit headers on every answer', async () => {
    const r = await chain('AAPL');
    expect(r.status).toBe(200);
    const body = r.json();
    expect(body).toMatchObject({ code: 'AAPL', exchange: 'US', lastTradeDate: '2024-01-19', lastTradePrice: expect.any(Number) });
    // The next Fridays after today.
    expect(body.data.map((d: { expirationDate: string }) => d.expirationDate)).toEqual(['2024-01-26', '2024-02-02']);
    const first = body.data[0];
    expect(first).toMatchObject({ optionsCount: 2 * FINNHUB_STRIKES, callVolume: expect.any(Number), putCallOpenInterestRatio: expect.any(Number) });
    expect(first.options.CALL).toHaveLength(FINNHUB_STRIKES);
    expect(first.options.PUT).toHaveLength(FINNHUB_STRIKES);
    const call = first.options.CALL[0];
    expect(call).toMatchObject({ type: 'CALL', expirationDate: '2024-01-26', contractSize: 'REGULAR', currency: 'USD', updatedAt: '2024-01-19 10:00:00' });
    expect(call.contractName).toMatch(/^AAPL240126C\d{8}$/);
    for (const field of ['strike', 'lastPrice', 'bid', 'ask', 'volume', 'openInterest', 'impliedVolatility', 'delta', 'gamma', 'theta', 'vega', 'rho'])
      expect(typeof call[field]).toBe('number');
    expect(call.bid).toBeLessThanOrEqual(call.ask);
    expect(body.data).toHaveLength(FINNHUB_EXPIRATIONS);
    // Same minute, same quotes: a re-fetch is the same snapshot.
    expect((await chain('AAPL', 'header')).json()).toEqual(body);
    expect(r.headers.get('x-ratelimit-limit')).toBe('60');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(r.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2024, 0, 19, 15, 1) / 1000));

    const none = await chain('AAPL', 'none');
    expect(none.status).toBe(401);
    expect(none.json()).toEqual({ error: 'Please use an API key.' });
    expect((await chain('not-a-ticker')).status).toBe(422);
  });

  test('per-minute limit: the 61st request of a minute is a 429 with the documented body and Remaining 0', async () => {
    for (let i = 0; i < 60; i++) {
      clock.advance(40); // 25 a second: under the per-second cap
      expect((await chain('MSFT')).status).toBe(200);
    }
    clock.advance(40);
    const over = await chain('MSFT');
    expect(over.status).toBe(429);
    expect(over.json()).toEqual({ error: 'API limit reached. Please try again later. Remaining Limit: 0' });
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(over.headers.get('retry-after')).toBeNull();
    const s = mv.stats().venues.finnhub;
    expect(s).toMatchObject({ maxWindowWeight: 60, overLimitRequests: 1, responses429: 1 });
    clock.advance(60_000);
    expect((await chain('MSFT')).status).toBe(200);
  });

  test('per-second cap: 30 requests in any second pass, the 31st is a 429, counted apart from the minute limit', async () => {
    mv.patchScenario({ venues: { finnhub: { limit: { requests: 1000 } } } });
    for (let i = 0; i < FINNHUB_BURST_PER_SECOND; i++) expect((await chain('TSLA')).status).toBe(200);
    const over = await chain('TSLA');
    expect(over.status).toBe(429);
    expect(over.json()).toEqual({ error: 'API limit reached. Please try again later. Remaining Limit: 0' });
    // Sliding: one second after the first 30, room again.
    clock.advance(1000);
    expect((await chain('TSLA')).status).toBe(200);
    const s = mv.stats().venues.finnhub;
    expect(s.extra).toEqual({ burstLimitPerSecond: 30, maxPerSecond: 30, burstRejected: 1 });
    expect(s.weightUsed).toBe(31);
    mv.reset();
    expect(mv.stats().venues.finnhub.extra).toEqual({ burstLimitPerSecond: 30, maxPerSecond: 0, burstRejected: 0 });
  });
});
