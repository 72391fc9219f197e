import { ManualClock } from '@tickfleet/testkit';
import { expectedCandles } from '../expected-candles.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';

const NOW = Date.UTC(2024, 0, 20, 12, 0, 15);

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

  test('day bars: one per trading session, stamped at New York midnight; none on weekends or holidays', async () => {
    // 2024-01-08..19: two weeks, Monday 2024-01-15 is Martin Luther King Jr. Day
    const r = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-08/2024-01-19?adjusted=true&sort=asc&limit=5000&apiKey=k`);
    expect(r.status).toBe(200);
    const body = r.json();
    expect(body).toMatchObject({ ticker: 'AAPL', queryCount: 9, resultsCount: 9, count: 9, adjusted: true, status: 'OK' });
    expect(body.request_id).toMatch(/^[0-9a-f]{32}$/);
    expect(body.next_url).toBeUndefined();
    const dates = ['08', '09', '10', '11', '12', '16', '17', '18', '19'];
    expect(body.results.map((b: { t: number }) => new Date(b.t).toISOString())).toEqual(dates.map((d) => `2024-01-${d}T05:00:00.000Z`));
    const expected = expectedCandles('polygon', 'AAPL', '1d', Date.UTC(2024, 0, 8), Date.UTC(2024, 0, 20), 42, { nowMs: NOW });
    body.results.forEach((bar: Record<string, number>, i: number) => {
      const c = expected[i]!;
      expect(Object.keys(bar).sort()).toEqual(['c', 'h', 'l', 'n', 'o', 't', 'v', 'vw']);
      expect(bar.t).toBe(c.openTime);
      expect([String(bar.o), String(bar.h), String(bar.l), String(bar.c), String(bar.v)]).toEqual([c.open, c.high, c.low, c.close, c.volume]);
      expect(bar.n).toBe(c.trades);
    });
    // summer time: New York midnight is 04:00Z
    const july = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2023-07-03/2023-07-05?apiKey=k`)).json();
    expect(july.results.map((b: { t: number }) => new Date(b.t).toISOString())).toEqual(['2023-07-03T04:00:00.000Z', '2023-07-05T04:00:00.000Z']);
    // a holiday or a weekend alone: no `results` key at all
    for (const day of ['2024-01-15', '2024-01-13']) {
      const empty = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/${day}/${day}?apiKey=k`)).json();
      expect(empty).toMatchObject({ resultsCount: 0, count: 0, status: 'OK' });
      expect('results' in empty).toBe(false);
      expect((await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/${day}/${day}?apiKey=k`)).json().resultsCount).toBe(0);
    }
  });

  test('intraday: every regular-session bar, sparse extended-hours bars, nothing outside 04:00-20:00 New York; early closes shortened', async () => {
    const minutes = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/2024-01-16/2024-01-16?limit=50000&apiKey=k`);
    const open = Date.UTC(2024, 0, 16, 14, 30);
    const close = Date.UTC(2024, 0, 16, 21, 0);
    const ts = minutes.bars.map((b) => b.t!);
    expect(ts.filter((t) => t >= open && t < close)).toHaveLength(390);
    const extended = ts.filter((t) => t < open || t >= close);
    expect(extended.length).toBeGreaterThan(570 * 0.15);
    expect(extended.length).toBeLessThan(570 * 0.35);
    expect(Math.min(...ts)).toBeGreaterThanOrEqual(Date.UTC(2024, 0, 16, 9)); // 04:00 New York
    expect(Math.max(...ts)).toBeLessThan(Date.UTC(2024, 0, 17, 1)); // 20:00 New York
    expect(ts).toEqual(expectedCandles('polygon', 'MSFT', '1m', Date.UTC(2024, 0, 16, 5), Date.UTC(2024, 0, 17, 5), 42, { nowMs: NOW }).map((c) => c.openTime));
    // hours: 04:00-19:00 New York, each holding some extended-hours trade, with the regular 09:00-15:00 ones
    const hours = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/hour/2024-01-16/2024-01-16?apiKey=k`);
    expect(hours.bars.map((b) => new Date(b.t!).getUTCHours())).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0]);
    // the day after Thanksgiving closes at 13:00 New York: regular minutes stop there, after-hours until 17:00
    const friday = (await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/2023-11-24/2023-11-24?limit=50000&apiKey=k`)).bars.map((b) => b.t!);
    expect(friday.filter((t) => t >= Date.UTC(2023, 10, 24, 14, 30) && t < Date.UTC(2023, 10, 24, 18))).toHaveLength(210);
    expect(Math.max(...friday)).toBeLessThan(Date.UTC(2023, 10, 24, 22));
  });

  test('pagination: next_url pages cover the range exactly once, ascending and descending, around holes', async () => {
    // without holes, an exact multiple of the page size ends without an empty trailing page
    const exact = await collect(`${base}/v2/aggs/ticker/SPY/range/1/day/2024-01-03/2024-01-19?limit=6&apiKey=k`);
    expect(exact.pages).toBe(2);
    expect(exact.bars).toHaveLength(12);
    const session = Date.UTC(2024, 0, 16, 14, 30);
    mv.patchScenario({ venues: { polygon: { holes: { rate: 0.05, ranges: [{ fromMs: session + 3600_000, toMs: session + 3600_000 + 7 * 60_000 }] } } } });
    const holes = mv.scenario().venues!.polygon!.holes;
    const expected = expectedCandles('polygon', 'MSFT', '1m', session - 2 * 3600_000, session + 3 * 3600_000, 42, { nowMs: NOW, holes });
    const to = session + 3 * 3600_000 - 1;
    const asc = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/${session - 2 * 3600_000}/${to}?sort=asc&limit=50&apiKey=k`);
    expect(asc.bars.map((b) => b.t)).toEqual(expected.map((c) => c.openTime));
    expect(asc.pages).toBe(Math.ceil(expected.length / 50));
    expect(asc.requests[1]).toMatch(new RegExp(`^${base}/v2/aggs/ticker/MSFT/range/1/minute/\\d+/${to}\\?cursor=[A-Za-z0-9_-]+&apiKey=k$`));
    const desc = await collect(`${base}/v2/aggs/ticker/MSFT/range/1/minute/${session - 2 * 3600_000}/${to}?sort=desc&limit=64&apiKey=k`);
    expect(desc.bars.map((b) => b.t)).toEqual(expected.map((c) => c.openTime).reverse());
  });

  test("closed intraday bars only; today's day bar is served while it trades, final once after-hours trading ended", async () => {
    clock.set(Date.UTC(2024, 0, 22, 15, 0, 15)); // Monday 10:00:15 New York
    const today = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/2024-01-22/2024-01-22?limit=50000&apiKey=k`)).json();
    expect(today.results.at(-1).t).toBe(Date.UTC(2024, 0, 22, 14, 59));
    const day = Date.UTC(2024, 0, 22, 5);
    const final = expectedCandles('polygon', 'AAPL', '1d', day, day + 1, 42, { nowMs: Date.UTC(2024, 0, 23, 1) })[0]!;
    const partial = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-22/2024-01-22?apiKey=k`)).json().results;
    expect(partial).toHaveLength(1);
    expect(partial[0].t).toBe(day);
    expect(String(partial[0].v)).not.toBe(final.volume);
    expect(expectedCandles('polygon', 'AAPL', '1d', day, day + 1, 42, { nowMs: Date.UTC(2024, 0, 23, 0, 59) })).toEqual([]);
    clock.set(Date.UTC(2024, 0, 23, 1)); // 20:00 New York: after-hours trading is over
    const settled = (await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-22/2024-01-22?apiKey=k`)).json().results[0];
    expect([String(settled.o), String(settled.h), String(settled.l), String(settled.c), String(settled.v)]).toEqual([
      final.open,
      final.high,
      final.low,
      final.close,
      final.volume,
    ]);
  });

  test('missing API key: 401 API Key was not provided (not counted against the limit); Authorization header accepted', async () => {
    const r = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05`);
    expect(r.status).toBe(401);
    expect(r.json()).toMatchObject({ status: 'ERROR', error: 'API Key was not provided' });
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

  test('unknown key: 401 Unknown API Key; a range before the plan history: 403 NOT_AUTHORIZED', async () => {
    mv.patchScenario({ venues: { polygon: { apiKeys: ['good-key'], historyDays: 730 } } });
    const unknown = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05?apiKey=other-key`);
    expect(unknown.status).toBe(401);
    expect(unknown.json()).toMatchObject({ status: 'ERROR', error: 'Unknown API Key' });
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05?apiKey=good-key`)).status).toBe(200);
    const old = await get(`${base}/v2/aggs/ticker/AAPL/range/1/day/2021-01-04/2021-01-08?apiKey=good-key`);
    expect(old.status).toBe(403);
    expect(old.json()).toEqual({
      status: 'NOT_AUTHORIZED',
      request_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      message: "Your plan doesn't include this data timeframe. Please upgrade your plan at https://polygon.io/pricing",
    });
  });

  test('unsupported ranges and bad dates are 400 with the error envelope', async () => {
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/7/minute/2024-01-01/2024-01-02?apiKey=k`)).status).toBe(400);
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/1/week/2024-01-01/2024-01-31?apiKey=k`)).status).toBe(400);
    const bad = await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/yesterday/2024-01-02?apiKey=k`);
    expect(bad.status).toBe(400);
    expect(bad.json().status).toBe('ERROR');
    expect((await get(`${base}/v2/aggs/ticker/AAPL/range/1/minute/2024-01-01/2024-01-02?cursor=zzz&apiKey=k`)).status).toBe(400);
  });
});
