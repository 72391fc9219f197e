import { ManualClock } from '@tickfleet/testkit';
import { expectedCandles } from './expected-candles.js';
import { unitFloat } from './data/random.js';
import { startMockVenue, type MockVenue } from './mock-venue-server.js';

const NOW = Date.UTC(2024, 0, 15, 8, 0, 30);
const KLINES = '/api/v3/klines?symbol=BTCUSDT&interval=1m&limit=1';

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; text: string; json: () => any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: () => JSON.parse(text) };
}

/** How many of the serials 1..n the emulation's hash puts under `rate` for `tag` (its fault draw). */
function drawn(tag: string, venue: string, n: number, rate: number, seed = 42): number {
  let count = 0;
  for (let serial = 1; serial <= n; serial++) if (unitFloat(tag, venue, serial, seed) < rate) count++;
  return count;
}

describe('scenario controls', () => {
  let mv: MockVenue;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    mv = await startMockVenue({ clock });
  });
  afterEach(() => mv.stop());

  test('latency: fixed and uniform, applied before the answer and visible in the latency percentiles', async () => {
    mv.patchScenario({ venues: { binance: { latencyMs: 150 }, polymarket: { latencyMs: { min: 50, max: 120 } } } });
    const t0 = performance.now();
    expect((await get(`${mv.baseUrl('binance')}${KLINES}`)).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(145);
    for (let i = 0; i < 4; i++) await get(`${mv.baseUrl('polymarket')}/markets?limit=1`);
    const s = mv.stats().venues;
    expect(s.binance.latency.count).toBe(1);
    expect(s.binance.latency.maxMs).toBeGreaterThanOrEqual(149);
    expect(s.polymarket.latency.count).toBe(4);
    expect(s.polymarket.latency.p50Ms).toBeGreaterThanOrEqual(49);
    expect(s.polymarket.latency.maxMs).toBeGreaterThanOrEqual(s.polymarket.latency.p50Ms);
  });

  test('5xx at a rate: deterministic per (seed, request serial), the venue error body, counted exactly', async () => {
    mv.patchScenario({ venues: { binance: { errorRate: 0.3 }, polygon: { errorRate: 1, errorStatuses: [502] } } });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await get(`${mv.baseUrl('binance')}${KLINES}`);
      statuses.push(r.status);
      if (r.status >= 500) expect(r.json().code).toBeLessThan(0);
    }
    const errors = statuses.filter((s) => s >= 500);
    expect(errors.length).toBe(drawn('error', 'binance', 40, 0.3));
    expect(errors.length).toBeGreaterThan(0);
    for (const s of errors) expect([500, 502, 503]).toContain(s);
    const p = await get(`${mv.baseUrl('polygon')}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05?apiKey=k`);
    expect(p.status).toBe(502);
    expect(p.json()).toMatchObject({ status: 'ERROR', error: 'Internal server error' });
    expect(mv.stats().venues.binance).toMatchObject({ requests: 40, responses5xx: errors.length, responses2xx: 40 - errors.length });
    // the same scenario replays the same faults after a reset
    mv.reset();
    const again: number[] = [];
    for (let i = 0; i < 40; i++) again.push((await get(`${mv.baseUrl('binance')}${KLINES}`)).status);
    expect(again).toEqual(statuses);
  });

  test('timeouts: the request is held unanswered; released when the client gives up or after timeoutMs', async () => {
    mv.patchScenario({ venues: { xetra: { timeoutRate: 1, timeoutMs: 400 } } });
    const url = `${mv.baseUrl('xetra')}/DETR-posttrade`;
    await expect(fetch(url, { signal: AbortSignal.timeout(150) })).rejects.toThrow();
    const t0 = performance.now();
    await expect(fetch(url).then((r) => r.text())).rejects.toThrow();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(380);
    expect(mv.stats().venues.xetra).toMatchObject({ requests: 2, timeouts: 2, responses2xx: 0, weightUsed: 2 });
  });

  test('outages: venue and whole-server windows drop connections unanswered; admin endpoints stay up', async () => {
    mv.patchScenario({ venues: { binance: { outageForMs: 1000 } } });
    await expect(fetch(`${mv.baseUrl('binance')}${KLINES}`)).rejects.toThrow();
    expect((await get(`${mv.baseUrl('polymarket')}/markets?limit=1`)).status).toBe(200);
    clock.advance(1000);
    expect((await get(`${mv.baseUrl('binance')}${KLINES}`)).status).toBe(200);
    mv.patchScenario({ outages: [{ fromMs: NOW + 2000, toMs: NOW + 3000 }] });
    clock.advance(1000);
    await expect(fetch(`${mv.baseUrl('polygon')}/v2/aggs/ticker/AAPL/range/1/day/2024-01-01/2024-01-05?apiKey=k`)).rejects.toThrow();
    await expect(fetch(`${mv.baseUrl('xetra')}/DETR-posttrade`)).rejects.toThrow();
    expect((await get(`${mv.url}/_mock/health`)).json()).toEqual({ status: 'ok' });
    const s = (await get(`${mv.url}/_mock/stats`)).json().venues;
    expect([s.binance.outageDrops, s.polygon.outageDrops, s.xetra.outageDrops, s.polymarket.outageDrops]).toEqual([1, 1, 1, 0]);
    expect(s.binance.requests).toBe(2);
  });

  test('429 storm: every request gets the venue 429 with Retry-After at the storm end; not counted as over limit', async () => {
    mv.patchScenario({ venues: { binance: { stormForMs: 5000 }, xetra: { storm: { fromMs: NOW, toMs: NOW + 2500 } } } });
    const b = await get(`${mv.baseUrl('binance')}${KLINES}`);
    expect(b.status).toBe(429);
    expect(b.headers.get('retry-after')).toBe('5');
    expect(b.json().code).toBe(-1003);
    const x = await get(`${mv.baseUrl('xetra')}/DETR-posttrade`);
    expect(x.status).toBe(429);
    expect(x.headers.get('retry-after')).toBe('3');
    clock.advance(5000);
    expect((await get(`${mv.baseUrl('binance')}${KLINES}`)).status).toBe(200);
    mv.patchScenario({ venues: { xetra: { stormForMs: 60_000 } } });
    mv.patchScenario({ venues: { xetra: { storm: null } } });
    expect((await get(`${mv.baseUrl('xetra')}/DETR-posttrade`)).status).toBe(200);
    expect(mv.stats().venues.binance).toMatchObject({ requests: 2, responses429: 1, stormResponses: 1, overLimitRequests: 0, weightUsed: 2 });
  });

  test('holes: the venue serves exactly expectedCandles with the same holes', async () => {
    const holes = { rate: 0.1, ranges: [{ symbol: 'BTC/USDT', timeframe: '1m' as const, fromMs: NOW - 600_000, toMs: NOW - 300_000 }] };
    mv.patchScenario({ venues: { binance: { holes } } });
    const from = NOW - 30_000 - 3 * 3600_000;
    const r = await get(`${mv.baseUrl('binance')}/api/v3/klines?symbol=BTCUSDT&interval=1m&startTime=${from}&limit=1000`);
    const expected = expectedCandles('binance', 'BTC/USDT', '1m', from, NOW, 42, { nowMs: NOW, holes });
    expect((r.json() as number[][]).map((row) => row[0])).toEqual(expected.map((c) => c.openTime));
    expect(expected.length).toBeLessThan(180 - 5);
  });

  test('malformed payloads at a rate: truncated JSON or the wrong shape, deterministic and counted', async () => {
    mv.patchScenario({ venues: { binance: { malformedRate: 0.5 } } });
    let bad = 0;
    let truncated = 0;
    for (let i = 0; i < 30; i++) {
      const r = await get(`${mv.baseUrl('binance')}${KLINES}`);
      expect(r.status).toBe(200);
      let parsed: unknown;
      try {
        parsed = JSON.parse(r.text);
      } catch {
        truncated++;
      }
      if (parsed === undefined || !Array.isArray(parsed)) bad++;
    }
    expect(bad).toBe(drawn('malformed', 'binance', 30, 0.5));
    expect(truncated).toBeGreaterThan(0);
    expect(truncated).toBeLessThan(bad);
    expect(mv.stats().venues.binance.malformedResponses).toBe(bad);
  });

  test('POST /_mock/reset clears counters, windows and bans; the scenario stays', async () => {
    mv.patchScenario({ venues: { binance: { limit: { weight: 2, banAfter: 0, banMs: 60_000 } } } });
    const url = `${mv.baseUrl('binance')}${KLINES}`;
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(429);
    expect((await get(url)).status).toBe(418);
    const reset = await get(`${mv.url}/_mock/reset`, { method: 'POST' });
    expect(reset.json()).toMatchObject({ ok: true });
    const s = mv.stats().venues.binance;
    expect(s).toMatchObject({ requests: 0, weightUsed: 0, maxWindowWeight: 0, overLimitRequests: 0, responses418: 0, bannedUntilMs: null, windows: [] });
    expect((await get(url)).status).toBe(200);
    expect(mv.stats().venues.binance.limit).toBe(2);
  });

  test('PATCH /_mock/scenario validates and names the bad field; good patches merge', async () => {
    const patch = (body: string) => get(`${mv.url}/_mock/scenario`, { method: 'PATCH', body, headers: { 'content-type': 'application/json' } });
    const bad = await patch(JSON.stringify({ venues: { binance: { limit: { weight: -1 } } } }));
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'E_VALIDATION', field: 'scenario.venues.binance.limit.weight' });
    expect(bad.json().error).toContain('scenario.venues.binance.limit.weight');
    const typo = await patch(JSON.stringify({ venues: { binance: { latncyMs: 5 } } }));
    expect(typo.status).toBe(400);
    expect(typo.json().error).toContain('latncyMs');
    expect((await patch(JSON.stringify({ venues: { coinbasepro: {} } }))).status).toBe(400);
    expect((await patch(JSON.stringify({ venues: { binance: { errorRate: 2 } } }))).json().field).toBe('scenario.venues.binance.errorRate');
    expect((await patch('{not json')).status).toBe(400);
    const ok = await patch(JSON.stringify({ seed: 9, venues: { binance: { limit: { weight: 100 } } } }));
    expect(ok.status).toBe(200);
    const ok2 = await patch(JSON.stringify({ venues: { binance: { limit: { windowMs: 5000 } } } }));
    expect(ok2.json()).toEqual({ seed: 9, venues: { binance: { limit: { weight: 100, windowMs: 5000 } } } });
    expect(mv.stats().venues.binance).toMatchObject({ limit: 100, windowMs: 5000 });
    expect((await get(`${mv.url}/_mock/scenario`)).json().seed).toBe(9);
  });

  test('the seed drives the data served: same seed same data, another seed other data', async () => {
    const url = `${mv.baseUrl('binance')}/api/v3/klines?symbol=BTCUSDT&interval=1m&startTime=${NOW - 3600_000}&limit=5`;
    const a = (await get(url)).text;
    expect((await get(url)).text).toBe(a);
    mv.patchScenario({ seed: 43 });
    expect((await get(url)).text).not.toBe(a);
  });
});
