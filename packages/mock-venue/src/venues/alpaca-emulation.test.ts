import { ManualClock } from '@tickfleet/testkit';
import { US_EQUITY_CALENDAR, usEquitySession } from '@tickfleet/core';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { expectedCandles } from '../expected-candles.js';
import { alpacaBarTimes } from './alpaca-emulation.js';

/** Monday 2024-01-22 15:00Z; the week before holds Martin Luther King Jr. Day (Monday 2024-01-15). */
const NOW = Date.UTC(2024, 0, 22, 15);
const AUTH = { 'APCA-API-KEY-ID': 'PKEMULATIONTEST00001', 'APCA-API-SECRET-KEY': 'emulation-secret-000000000000000000000001' };

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string, headers: Record<string, string> = AUTH): Promise<{ status: number; headers: Headers; json: () => any }> {
  const r = await fetch(url, { headers });
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: () => JSON.parse(text) };
}

describe('alpaca emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let bars: string;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    mv = await startMockVenue({ clock });
    bars = `${mv.baseUrl('alpaca')}/v2/stocks/bars`;
  });
  afterEach(() => mv.stop());

  it('serves day bars of many symbols only for sessions, stamped at New York midnight, sorted by symbol', async () => {
    const r = await get(`${bars}?symbols=TSLA,AAPL&timeframe=1Day&start=2024-01-12T00:00:00Z&end=2024-01-19T23:59:59Z`);
    expect(r.status).toBe(200);
    const body = r.json();
    expect(Object.keys(body.bars)).toEqual(['AAPL', 'TSLA']);
    // Fri 12th, (Sat, Sun, MLK Monday closed), Tue 16th .. Fri 19th: 05:00Z in winter
    expect(body.bars.AAPL.map((b: { t: string }) => b.t)).toEqual([
      '2024-01-12T05:00:00Z',
      '2024-01-16T05:00:00Z',
      '2024-01-17T05:00:00Z',
      '2024-01-18T05:00:00Z',
      '2024-01-19T05:00:00Z',
    ]);
    expect(body.next_page_token).toBeNull();
    expect(Object.keys(body.bars.AAPL[0]).sort()).toEqual(['c', 'h', 'l', 'n', 'o', 't', 'v', 'vw']);
    expect(Number.isInteger(body.bars.AAPL[0].v)).toBe(true);
    expect(US_EQUITY_CALENDAR.expectedOpenTimes('1d', Date.UTC(2024, 0, 12), Date.UTC(2024, 0, 20))).toEqual(
      body.bars.AAPL.map((b: { t: string }) => Date.parse(b.t)),
    );
  });

  it('expectedCandles keys Alpaca day bars by the New York session day and holds what the emulation serves', async () => {
    // NOW is Monday 10:00 New York: the week before's sessions are final, today's day bar is not yet
    const want = expectedCandles('alpaca', 'AAPL', '1d', Date.UTC(2024, 0, 12), NOW + 86_400_000, 42, { nowMs: NOW });
    expect(want.map((c) => new Date(c.openTime).toISOString())).toEqual([
      '2024-01-12T05:00:00.000Z',
      '2024-01-16T05:00:00.000Z',
      '2024-01-17T05:00:00.000Z',
      '2024-01-18T05:00:00.000Z',
      '2024-01-19T05:00:00.000Z',
    ]);
    const served = (await get(`${bars}?symbols=AAPL&timeframe=1Day&start=2024-01-12&feed=iex`)).json().bars.AAPL;
    expect(served.at(-1).t).toBe('2024-01-22T05:00:00Z'); // served while it trades, not yet final
    const asStored = (b: { t: string; o: number; h: number; l: number; c: number; v: number; n: number }) => ({
      openTime: Date.parse(b.t),
      open: String(b.o),
      high: String(b.h),
      low: String(b.l),
      close: String(b.c),
      volume: String(b.v),
      trades: b.n,
    });
    expect(want.map(({ openTime, open, high, low, close, volume, trades }) => ({ openTime, open, high, low, close, volume, trades }))).toEqual(
      served.slice(0, -1).map(asStored),
    );
    // minute bars of a closed session: every one the emulation serves, extended hours included
    const session = usEquitySession('2024-01-19')!;
    const minutes = expectedCandles('alpaca', 'MSFT', '1m', session.dayStartMs, session.dayStartMs + 86_400_000, 42, { nowMs: NOW });
    expect(minutes.map((c) => c.openTime)).toEqual(alpacaBarTimes('MSFT', '1m', session.dayStartMs, session.dayStartMs + 86_400_000, NOW, 42));
    expect(minutes.filter((c) => c.openTime >= session.openMs && c.openTime < session.closeMs)).toHaveLength(390);
  });

  it('pages minute bars over all symbols by limit and page_token: every regular minute once, extended minutes only where traded', async () => {
    const session = usEquitySession('2024-01-19')!;
    const start = new Date(session.dayStartMs).toISOString();
    const end = new Date(session.dayStartMs + 86_400_000 - 1).toISOString();
    const symbols = ['MSFT', 'AAPL', 'NVDA'];
    const got = new Map<string, number[]>();
    let token: string | null = null;
    let pages = 0;
    do {
      const r = await get(
        `${bars}?symbols=${symbols.join(',')}&timeframe=1Min&start=${start}&end=${end}&limit=1000&feed=sip${token ? `&page_token=${token}` : ''}`,
      );
      expect(r.status).toBe(200);
      const body = r.json();
      let n = 0;
      for (const [sym, list] of Object.entries(body.bars as Record<string, Array<{ t: string }>>)) {
        n += list.length;
        got.set(sym, [...(got.get(sym) ?? []), ...list.map((b) => Date.parse(b.t))]);
      }
      expect(n).toBeLessThanOrEqual(1000);
      token = body.next_page_token;
      pages += 1;
    } while (token !== null);
    let total = 0;
    for (const sym of symbols) {
      const truth = alpacaBarTimes(sym, '1m', session.dayStartMs, session.dayStartMs + 86_400_000, NOW, 42);
      expect(got.get(sym)).toEqual(truth);
      total += truth.length;
      const regular = truth.filter((t) => t >= session.openMs && t < session.closeMs);
      expect(regular).toHaveLength(390);
      expect(truth.length).toBeGreaterThan(390); // some pre- and post-market minutes
      expect(truth.every((t) => t >= session.dayStartMs + 4 * 3_600_000 && t < session.closeMs + 4 * 3_600_000)).toBe(true);
    }
    expect(pages).toBe(Math.ceil(total / 1000));
  });

  it('serves the single-symbol /v2/stocks/{symbol}/bars: a bar array with its symbol, paged by page_token', async () => {
    const single = `${mv.baseUrl('alpaca')}/v2/stocks/AAPL/bars`;
    const multi = (await get(`${bars}?symbols=AAPL&timeframe=1Day&start=2024-01-02&end=2024-01-19`)).json();
    const got: unknown[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const r = await get(`${single}?timeframe=1Day&start=2024-01-02&end=2024-01-19&limit=4${token ? `&page_token=${token}` : ''}`);
      expect(r.status).toBe(200);
      const body = r.json();
      expect(Object.keys(body)).toEqual(['bars', 'symbol', 'next_page_token']);
      expect(body.symbol).toBe('AAPL');
      got.push(...body.bars);
      token = body.next_page_token;
      pages += 1;
    } while (token !== null);
    // 2024-01-02 .. 01-19 holds 13 sessions (MLK Monday closed): four pages of at most four
    expect(got).toHaveLength(13);
    expect(pages).toBe(4);
    expect(got).toEqual(multi.bars.AAPL);
    // a day with no session: no bars
    const none = (await get(`${single}?timeframe=1Day&start=2024-01-15&end=2024-01-15`)).json();
    expect(none).toEqual({ bars: null, symbol: 'AAPL', next_page_token: null });
    const bad = await get(`${mv.baseUrl('alpaca')}/v2/stocks/AAPL,MSFT/bars?timeframe=1Day`);
    expect([bad.status, bad.json()]).toEqual([400, { message: 'invalid symbol: "AAPL,MSFT"' }]);
  });

  it('serves feed=sip without end up to 15 minutes ago on the Basic plan; an end within them is refused', async () => {
    // NOW is 10:00 New York: without end the newest minute served is 14:45Z (end inclusive)
    for (const url of [
      `${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z&feed=sip`,
      `${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z`,
    ]) {
      const r = await get(url);
      expect(r.status).toBe(200);
      const times = r.json().bars.AAPL.map((b: { t: string }) => Date.parse(b.t));
      expect(times).toEqual(alpacaBarTimes('AAPL', '1m', Date.UTC(2024, 0, 22, 14), Date.UTC(2024, 0, 22, 14, 45) + 1, NOW, 42));
      expect(times.at(-1)).toBe(Date.UTC(2024, 0, 22, 14, 45));
    }
    const iex = (await get(`${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z&feed=iex`)).json();
    expect(iex.bars.AAPL.at(-1).t).toBe('2024-01-22T14:59:00Z');
    const recent = await get(`${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z&end=2024-01-22T14:46:00Z&feed=sip`);
    expect([recent.status, recent.json()]).toEqual([403, { message: 'subscription does not permit querying recent SIP data' }]);
  });

  it('reports X-RateLimit-* on every answer and refuses beyond the limit with 429 and no Retry-After', async () => {
    mv.patchScenario({ venues: { alpaca: { limit: { requests: 3 } } } });
    const q = `${bars}?symbols=AAPL&timeframe=1Day&start=2024-01-16&end=2024-01-17`;
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await get(q);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('3');
      expect(r.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2024, 0, 22, 15, 1) / 1000));
      remaining.push(r.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await get(q);
    expect(refused.status).toBe(429);
    expect(refused.json()).toEqual({ message: 'too many requests.' });
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    clock.advance(60_000);
    expect((await get(q)).status).toBe(200);
    expect(mv.stats().venues.alpaca).toMatchObject({ requests: 5, responses429: 1, maxWindowWeight: 3 });
  });

  it('answers auth, plan and parameter errors as Alpaca does', async () => {
    const q = `${bars}?symbols=AAPL&timeframe=1Day&start=2024-01-16&end=2024-01-17`;
    const missing = await get(q, {});
    expect([missing.status, missing.json()]).toEqual([401, { message: 'unauthorized.' }]);
    const unknown = await get(q, { 'APCA-API-KEY-ID': 'not a key', 'APCA-API-SECRET-KEY': 'whatever-secret' });
    expect([unknown.status, unknown.json()]).toEqual([403, { message: 'forbidden.' }]);
    const recentSip = await get(`${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z&end=2024-01-22T14:55:00Z`);
    expect([recentSip.status, recentSip.json()]).toEqual([403, { message: 'subscription does not permit querying recent SIP data' }]);
    const recentIex = await get(`${bars}?symbols=AAPL&timeframe=1Min&start=2024-01-22T14:00:00Z&end=2024-01-22T14:55:00Z&feed=iex`);
    expect(recentIex.status).toBe(200);
    expect(recentIex.json().bars.AAPL.at(-1).t).toBe('2024-01-22T14:55:00Z');
    for (const [query, message] of [
      ['timeframe=1Day', 'missing symbols'],
      ['symbols=AAPL&timeframe=1Day&limit=10001', 'invalid limit: exceeds max limit of 10000'],
      ['symbols=AAPL&timeframe=7Min', 'invalid timeframe: 7Min (the emulation serves 1Min and 1Day)'],
      ['symbols=AAPL&timeframe=1Day&feed=otc', 'invalid feed: otc'],
      ['symbols=AAPL&timeframe=1Day&start=yesterday', 'invalid start: yesterday'],
      ['symbols=AAPL&timeframe=1Day&page_token=bm9wZQ', 'invalid page token'],
    ]) {
      const r = await get(`${bars}?${query}`);
      expect([r.status, r.json()]).toEqual([400, { message }]);
    }
    expect(mv.stats().venues.alpaca.responses4xx).toBe(9);
  });
});
