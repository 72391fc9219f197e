import { ManualClock } from '@tickfleet/testkit';
import { expectedCandles } from '../data/candles.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';

const NOW = Date.UTC(2024, 0, 20, 12, 0, 15);
const DAY = Date.UTC(2024, 0, 15);

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; json: () => any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: () => JSON.parse(text) };
}

/** Follows next_url (adding apiKey, as the adapter does) and returns every bar plus the page count. */
async function collect(first: string): Promise<{ bars: Array<Record<string, number>>; pages: number; requests: string[] }> {
  const bars: Array<Record<string, number>> = [];
  const requests: string[] = [];
  let url: string | undefined = first;
  let pages = 0;
  while (url) {
    requests.push(url);
    const r = await get(url);
    expect(r.status).toBe(200);
    const body = r.json();
    pages += 1;
    bars.push(...(body.results ?? []));
    url = body.next_url ? `${body.next_url}&apiKey=k` : undefined;
  }
  return { bars, pages, requests };
}

describe('polygon emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let base: string;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    mv = await startMockVenue({ clock, scenario: { venues: { polygon: { limit: { requests: 1000 } } } } });
    base = mv.baseUrl('polygon');
  });
  afterEach(() => mv.stop());

  test('aggregates: documented envelope; bars equal the deterministic candles', async () => {
    const r = await get(`${base}/v2/aggs/ticker/AAPL/range/1/hour/2024-01-15/2024-01-15?adjusted=true&sort=asc&limit=5000&apiKey=k`);
    expect(r.status).toBe(200);
    const body = r.json();
    expect(body).toMatchObject({ ticker: 'AAPL', queryCount: 24, resultsCount: 24, count: 24, adjusted: true, status: 'OK' });
    expect(body.request_id).toMatch(/^[0-9a-f]{32}$/);
    expect(body.next_url).toBeUndefined();
    const expected = expectedCandles('polygon', 'AAPL', '1h', DAY, DAY + 86_400_000, 42, { nowMs: NOW });
    expect(body.results).toHaveLength(24);
    body.results.forEach((bar: Record<string, number>, i: number) => {
      const c = expected[i]!;
      expect(Object.keys(bar).sort()).toEqual(['c', 'h', 'l', 'n', 'o', 't', 'v', 'vw']);
      expect(bar.t).toBe(c.openTime);
      expect([String(bar.o), String(bar.h), String(bar.l), String(bar.c), String(bar.v)]).toEqual([c.open, c.high, c.low, c.close, c.volume]);
      expect(bar.n).toBe(c.trades);
    });
  });

  test('pagination: next_url pages cover the range exactly once, ascending and descending, around holes', async () => {
    // without holes, an exact multiple of the page size ends without an empty trailing page
    const exact = await collect(`${base}/v2/aggs/ticker/SPY/range/1/hour/2024-01-15/2024-01-15?limit=12&apiKey=k`);
    expect(exact.pages).toBe(2);
    expect(exact.bars).toHaveLength(24);
    mv.patchScenario({ venues: { polygon: { holes: { rate: 0.05, ranges: [{ fromMs: DAY + 3600_000, toMs: DAY + 3600_000 + 7 * 60_000 }] } } } });
    const holes = mv.scenario().venues!.polygon!.holes;
    const expected = expectedCandles('polygon', 'MSFT', '1m', DAY, DAY + 3 * 3600_000, 42, { nowMs: NOW, holes });
    const to = DAY + 3 * 3600_000 - 1;
    const asc = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/${DAY}/${to}?sort=asc&limit=50&apiKey=k`);
    expect(asc.bars.map((b) => b.t)).toEqual(expected.map((c) => c.openTime));
    expect(asc.pages).toBe(Math.ceil(expected.length / 50));
    expect(asc.requests[1]).toMatch(new RegExp(`^${base}/v2/aggs/ticker/MSFT/range/1/minute/\\d+/${to}\\?cursor=[A-Za-z0-9_-]+&apiKey=k$`));
    const desc = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/${DAY}/${to}?sort=desc&limit=64&apiKey=k`);
    expect(desc.bars.map((b) => b.t)).toEqual(expected.map((c) => c.openTime).reverse());
  });

  test('closed bars only; an empty range has no results key', async () => {
    const today = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/2024-01-20/2024-01-20?apiKey=k`)).json();
    expect(today.resultsCount).toBe(12 * 60);
    expect(today.results.at(-1).t).toBe(NOW - 15_000 - 60_000);
    const future = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2025-01-01/2025-01-05?apiKey=k`)).json();
    expect(future).toMatchObject({ resultsCount: 0, count: 0, status: 'OK' });
    expect('results' in future).toBe(false);
  });

  test('missing API key: 401 Unknown API Key (not counted against the limit); Authorization header accepted', async () => {
    const r = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05`);
    expect(r.status).toBe(401);
    expect(r.json()).toMatchObject({ status: 'ERROR', error: 'Unknown API Key' });
    const bearer = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05`, { headers: { authorization: 'Bearer k' } });
    expect(bearer.status).toBe(200);
    expect(mv.stats().venues.polygon).toMatchObject({ requests: 2, weightUsed: 1, responses4xx: 1, responses2xx: 1 });
  });

  test('free tier: 5 requests per aligned window, then 429 with the documented body and no Retry-After', async () => {
    mv.patchScenario({ venues: { polygon: { limit: { requests: 5, windowMs: 60_000 } } } });
    const url = `${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05?apiKey=k`;
    for (let i = 0; i < 5; i++) expect((await get(url)).status).toBe(200);
    const r = await get(url);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBeNull();
    const body = r.json();
    expect(body.status).toBe('ERROR');
    expect(body.error).toBe(
      "You've exceeded the maximum requests per minute, please wait or upgrade your subscription to continue. https://polygon.io/pricing",
    );
    expect(typeof body.request_id).toBe('string');
    clock.advance(45_000); // 12:01:00: a new window
    expect((await get(url)).status).toBe(200);
    expect(mv.stats().venues.polygon).toMatchObject({ requests: 7, weightUsed: 6, maxWindowWeight: 5, overLimitRequests: 1, responses429: 1, limit: 5 });
  });

  test('unsupported ranges and bad dates are 400 with the error envelope', async () => {
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/7/minute/2024-01-01/2024-01-02?apiKey=k`)).status).toBe(400);
    const bad = await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/yesterday/2024-01-02?apiKey=k`);
    expect(bad.status).toBe(400);
    expect(bad.json().status).toBe('ERROR');
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/2024-01-01/2024-01-02?cursor=zzz&apiKey=k`)).status).toBe(400);
  });
});
