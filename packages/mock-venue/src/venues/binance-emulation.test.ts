import { ManualClock } from '@tickfleet/testkit';
import { candleAt } from '../data/candles.js';
import { expectedCandles } from '../expected-candles.js';
import { binanceDepthSnapshot } from './binance-ws-market.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30);

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string): Promise<{ status: number; headers: Headers; text: string; json: () => any }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: () => JSON.parse(text) };
}

describe('binance emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let base: string;

  beforeEach(async () => {
    clock = new ManualClock(T0);
    mv = await startMockVenue({ clock, scenario: { venues: { binance: { limit: { weight: 20, windowMs: 10_000, banAfter: 2, banMs: 1000 } } } } });
    base = mv.baseUrl('binance');
  });
  afterEach(() => mv.stop());

  test('klines: the documented row shape, exactly the deterministic candles, closed only', async () => {
    const r = await get(`${base}/api/v3/klines?symbol=BTCUSDT&interval=1m&startTime=${T0 - 5 * 60_000 - 30_000}`);
    expect(r.status).toBe(200);
    const rows = r.json() as unknown[][];
    // 07:55 .. 07:59 are closed at 08:00:30; 08:00 is still open
    expect(rows.map((row) => row[0])).toEqual([0, 1, 2, 3, 4].map((i) => T0 - 30_000 - (5 - i) * 60_000));
    const expected = expectedCandles('binance', 'BTC/USDT', '1m', T0 - 3600_000, T0 + 3600_000, 42, { nowMs: T0 });
    const tail = expected.slice(-5);
    rows.forEach((row, i) => {
      const c = tail[i]!;
      expect(row).toHaveLength(12);
      expect(row.slice(0, 6)).toEqual([c.openTime, c.open, c.high, c.low, c.close, c.volume]);
      expect(row[6]).toBe(c.openTime + 59_999);
      expect(row[8]).toBe(c.trades);
      expect(row[11]).toBe('0');
    });
  });

  test('klines: a page fetched again is the same bytes, and a new clock, seed or hole setting makes a new one', async () => {
    mv.patchScenario({ venues: { binance: { limit: { weight: 6000 } } } });
    const start = Date.UTC(2024, 0, 15, 6, 0);
    const url = `${base}/api/v3/klines?symbol=BTCUSDT&interval=1m&startTime=${start}&limit=1000`;
    const first = (await get(url)).text;
    // 07:59 is the newest closed candle at 08:00:30: 120 rows.
    expect(JSON.parse(first)).toHaveLength(120);
    expect((await get(url)).text).toBe(first);
    // Ten minutes later the same request holds ten more closed candles.
    clock.advance(10 * 60_000);
    const later = JSON.parse((await get(url)).text) as number[][];
    expect(later).toHaveLength(130);
    expect(JSON.stringify(later.slice(0, 120))).toBe(first);
    const candles = (seed: number, holes?: { rate: number }) =>
      expectedCandles('binance', 'BTC/USDT', '1m', start, start + 130 * 60_000, seed, { nowMs: clock.now(), ...(holes ? { holes } : {}) });
    const opens = (text: string): number[] => (JSON.parse(text) as number[][]).map((r) => r[0]!);
    mv.patchScenario({ venues: { binance: { holes: { rate: 0.2 } } } });
    expect(opens((await get(url)).text)).toEqual(candles(42, { rate: 0.2 }).map((c) => c.openTime));
    mv.patchScenario({ seed: 7 });
    const reseeded = JSON.parse((await get(url)).text) as unknown[][];
    expect(reseeded.map((r) => [r[0], r[1]])).toEqual(candles(7, { rate: 0.2 }).map((c) => [c.openTime, c.open]));
  });

  test('klines: startTime/endTime inclusive on openTime, limit default 500 and max 1000, newest when no start', async () => {
    const start = Date.UTC(2024, 0, 15, 7, 0);
    const both = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1m&startTime=${start}&endTime=${start + 2 * 60_000}`)).json() as number[][];
    expect(both.map((r) => r[0])).toEqual([start, start + 60_000, start + 120_000]);
    const unaligned = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1m&startTime=${start + 1}&limit=2`)).json() as number[][];
    expect(unaligned.map((r) => r[0])).toEqual([start + 60_000, start + 120_000]);
    clock.advance(3 * 86_400_000);
    const dflt = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1m&startTime=${start}`)).json() as number[][];
    expect(dflt).toHaveLength(500);
    const max = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1m&startTime=${start}&limit=5000`)).json() as number[][];
    expect(max).toHaveLength(1000);
    const newest = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1h&limit=3`)).json() as number[][];
    const lastClosedHour = Math.floor(clock.now() / 3600_000) * 3600_000 - 3600_000;
    expect(newest.map((r) => r[0])).toEqual([lastClosedHour - 7200_000, lastClosedHour - 3600_000, lastClosedHour]);
    const endOnly = (await get(`${base}/api/v3/klines?symbol=ETHUSDT&interval=1m&endTime=${start + 30_000}&limit=2`)).json() as number[][];
    expect(endOnly.map((r) => r[0])).toEqual([start - 60_000, start]);
    expect(endOnly[1]![1]).toBe(candleAt('binance', 'ETH/USDT', '1m', start, 42).open);
  });

  test('bad symbol, bad interval and missing parameters answer the documented 400 bodies', async () => {
    const bad = await get(`${base}/api/v3/klines?symbol=NOPEUSDT&interval=1m`);
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({ code: -1121, msg: 'Invalid symbol.' });
    const iv = await get(`${base}/api/v3/klines?symbol=BTCUSDT&interval=7m`);
    expect(iv.status).toBe(400);
    expect(iv.json()).toEqual({ code: -1120, msg: 'Invalid interval.' });
    expect((await get(`${base}/api/v3/klines?interval=1m`)).json().code).toBe(-1102);
    expect((await get(`${base}/api/v3/depth?symbol=BTCUSDT&limit=1`)).status).toBe(400);
    expect(mv.stats().venues.binance.responses4xx).toBe(4);
  });

  test('depth: the streamed book at the last closed 100 ms tick; weight by limit in X-MBX-USED-WEIGHT-1M', async () => {
    const r = await get(`${base}/api/v3/depth?symbol=BTCUSDT&limit=10`);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-mbx-used-weight-1m')).toBe('5');
    const body = r.json();
    expect(body).toEqual(JSON.parse(binanceDepthSnapshot('BTC/USDT', T0, 42, 10)));
    expect(body.bids).toHaveLength(10);
    mv.patchScenario({ venues: { binance: { limit: { weight: 6000 } } } });
    const heavier = await get(`${base}/api/v3/depth?symbol=BTCUSDT&limit=500`);
    expect(heavier.headers.get('x-mbx-used-weight-1m')).toBe('30');
    expect(heavier.json().bids).toHaveLength(500);
    const info = await get(`${base}/api/v3/exchangeInfo`);
    expect(info.headers.get('x-mbx-used-weight-1m')).toBe('50');
    const ei = info.json();
    expect(ei.timezone).toBe('UTC');
    expect(ei.serverTime).toBe(T0);
    expect(ei.rateLimits).toEqual([
      { rateLimitType: 'REQUEST_WEIGHT', interval: 'SECOND', intervalNum: 10, limit: 6000 },
      { rateLimitType: 'ORDERS', interval: 'SECOND', intervalNum: 10, limit: 50 },
      { rateLimitType: 'ORDERS', interval: 'DAY', intervalNum: 1, limit: 160_000 },
      { rateLimitType: 'RAW_REQUESTS', interval: 'MINUTE', intervalNum: 5, limit: 61_000 },
    ]);
    const btc = ei.symbols.find((x: { symbol: string }) => x.symbol === 'BTCUSDT');
    expect(btc).toMatchObject({ symbol: 'BTCUSDT', status: 'TRADING', baseAsset: 'BTC', quoteAsset: 'USDT' });
    const filters = new Map<string, Record<string, unknown>>(btc.filters.map((f: { filterType: string }) => [f.filterType, f]));
    expect([...filters.keys()]).toEqual(
      expect.arrayContaining(['PRICE_FILTER', 'LOT_SIZE', 'NOTIONAL', 'ICEBERG_PARTS', 'MARKET_LOT_SIZE', 'MAX_NUM_ORDERS', 'PERCENT_PRICE_BY_SIDE']),
    );
    // the book's prices and quantities sit on the published tick and step
    const tick = Number(filters.get('PRICE_FILTER')!.tickSize);
    const step = Number(filters.get('LOT_SIZE')!.stepSize);
    for (const [price, qty] of [...body.bids, ...body.asks] as Array<[string, string]>) {
      expect(Math.abs(Number(price) / tick - Math.round(Number(price) / tick))).toBeLessThan(1e-6);
      expect(Math.abs(Number(qty) / step - Math.round(Number(qty) / step))).toBeLessThan(1e-6);
    }
    expect(filters.get('NOTIONAL')).toMatchObject({ minNotional: '5.00000000', applyMinToMarket: true });
    expect(mv.stats().venues.binance.weightUsed).toBe(50);
  });

  test('weight limit per aligned window: 429 with Retry-After to the window end, then a 418 ban for clients that keep going', async () => {
    const url = `${base}/api/v3/klines?symbol=BTCUSDT&interval=1m&limit=1`;
    // T0 is 08:00:30.000, window [08:00:30, 08:00:40): 10 klines (weight 2) fill the 20
    for (let i = 0; i < 10; i++) expect((await get(url)).status).toBe(200);
    clock.advance(2500);
    const first = await get(url);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('8');
    expect(first.headers.get('x-mbx-used-weight-1m')).toBe('20');
    expect(first.json()).toEqual({
      code: -1003,
      msg: 'Too much request weight used; current limit is 20 request weight per 10 SECOND. Please use the websocket for live updates to avoid polling the API.',
    });
    // banAfter 2: two more 429s are tolerated, the third request after the first 429 is banned
    expect((await get(url)).status).toBe(429);
    expect((await get(url)).status).toBe(429);
    const ban = await get(url);
    expect(ban.status).toBe(418);
    const until = T0 + 2500 + 1000;
    expect(ban.json()).toEqual({
      code: -1003,
      msg: `Way too much request weight used; IP banned until ${until}. Please use the websocket for live updates to avoid bans.`,
    });
    expect(ban.headers.get('retry-after')).toBe('1');
    // while banned, every request answers 418
    expect((await get(url)).status).toBe(418);
    let s = mv.stats().venues.binance;
    expect(s).toMatchObject({
      requests: 15,
      weightUsed: 20,
      maxWindowWeight: 20,
      limit: 20,
      windowMs: 10_000,
      overLimitRequests: 5,
      responses2xx: 10,
      responses429: 3,
      responses418: 2,
      bannedUntilMs: until,
      bans: 1,
    });
    // the next window opens: the ban is over (1 s) and weight counts from zero
    clock.advance(7500);
    const again = await get(url);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-mbx-used-weight-1m')).toBe('2');
    s = mv.stats().venues.binance;
    expect(s.bannedUntilMs).toBeNull();
    expect(s.windows).toEqual([
      { startMs: T0, weight: 20 },
      { startMs: T0 + 10_000, weight: 2 },
    ]);
  });

  test('scenario symbols replace the listed pairs', async () => {
    mv.patchScenario({ venues: { binance: { symbols: ['PEPE/USDT', 'ETH/BTC'], limit: { weight: 6000 } } } });
    const info = (await get(`${base}/api/v3/exchangeInfo`)).json();
    expect(info.symbols.map((s: { symbol: string }) => s.symbol)).toEqual(['PEPEUSDT', 'ETHBTC']);
    expect(info.symbols[0]).toMatchObject({ baseAsset: 'PEPE', quoteAsset: 'USDT' });
    const rows = (await get(`${base}/api/v3/klines?symbol=PEPEUSDT&interval=1m&limit=1`)).json() as unknown[][];
    expect(rows[0]![1]).toBe(candleAt('binance', 'PEPE/USDT', '1m', T0 - 30_000 - 60_000, 42).open);
    expect((await get(`${base}/api/v3/klines?symbol=BTCUSDT&interval=1m`)).json().code).toBe(-1121);
  });

  test('repeat bans double', async () => {
    mv.patchScenario({ venues: { binance: { limit: { weight: 2, banAfter: 0 } } } });
    const url = `${base}/api/v3/ping`;
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(429);
    expect((await get(url)).json().msg).toContain(`banned until ${T0 + 1000}`);
    clock.advance(10_000);
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(429);
    expect((await get(url)).json().msg).toContain(`banned until ${T0 + 10_000 + 2000}`);
    expect(mv.stats().venues.binance.bans).toBe(2);
  });
});
