import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MalformedPayloadError, type Envelope } from '@tickfleet/core';
import {
  binanceModel,
  coinbaseModel,
  krakenModel,
  lastClosedTick,
  startMockVenue,
  STREAM_TICK_MS,
  type MockVenue,
  type StreamBookModel,
} from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { BinanceAdapter, createVenueAdapter, isTradeSource, supportedJobTypes, type BeforeRequestInfo, type TradePage } from '../src/index.js';
import { caught, collect } from './async-helpers.js';
import { fixture, FixtureServer } from './fixture-server.js';

const SEED = 7;
const T0 = Date.UTC(2024, 3, 9, 10, 20, 30, 250);
const MINUTE = 60_000;

/** The emulation's trades with `sinceMs <= time < untilMs` that are published at `nowMs`: the ground truth of a poll. */
function truth(model: StreamBookModel, sinceMs: number, untilMs: number, nowMs: number): Array<{ id: number; timeMs: number }> {
  const lastId = model.lastTradeId(lastClosedTick(nowMs));
  const firstId = Math.max(1, model.lastTradeId(Math.floor(sinceMs / STREAM_TICK_MS) - 2) + 1);
  return model
    .tradesBetween(firstId, lastId)
    .filter((t) => t.timeMs >= sinceMs && t.timeMs < untilMs)
    .map((t) => ({ id: t.id, timeMs: t.timeMs }));
}

const idsOf = (pages: TradePage[]): Array<{ id: number; timeMs: number }> =>
  pages.flatMap((p) => p.trades.map((t) => ({ id: Number(t.tradeId), timeMs: t.timeMs })));

describe('trade polling against the emulations over HTTP', () => {
  let mock: MockVenue;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock(T0);
    mock = await startMockVenue({ clock, scenario: { seed: SEED } });
  });
  afterEach(() => mock.stop());

  it('binance: the first trade id by aggTrades startTime, then historicalTrades by id; resumes after the cursor exactly', async () => {
    const before: BeforeRequestInfo[] = [];
    const adapter = createVenueAdapter('binance', { baseUrl: mock.baseUrl('binance'), clock, hooks: { beforeRequest: async (i) => void before.push(i) } });
    expect(adapter.tradeCursor).toBe('id');
    const model = binanceModel('BTCUSDT', SEED);
    const sinceMs = T0 - 5 * MINUTE;
    const pages = await collect(adapter.fetchTrades('BTC/USDT', { sinceMs }));
    const want = truth(model, sinceMs, Number.POSITIVE_INFINITY, T0);
    expect(want.length).toBeGreaterThan(2000);
    expect(idsOf(pages)).toEqual(want);
    expect(pages.every((p) => p.holes.length === 0)).toBe(true);
    expect(pages.map((p) => p.cursor)).toEqual(pages.map((p) => Number(p.trades.at(-1)!.tradeId)));
    const first = pages[0]!.envelopes[0]!;
    const t = model.tradesBetween(want[0]!.id, want[0]!.id)[0]!;
    // the envelope a `@trade` stream gives the same trade (binance-stream-session.ts)
    expect(first).toMatchObject<Partial<Envelope>>({
      messageId: `binance:BTCUSDT:trade:${t.id}`,
      channel: 'trades',
      symbol: 'BTC/USDT',
      serverTimeMs: t.timeMs,
      payload: {
        venue: 'binance',
        symbol: 'BTC/USDT',
        tradeId: String(t.id),
        timeMs: t.timeMs,
        price: model.formatPrice(t.priceTicks, 8),
        size: model.formatQty(t.qtyUnits, 8),
        side: t.buyerMaker ? 'sell' : 'buy',
      },
    });
    const pagesNeeded = Math.ceil(want.length / 1000);
    expect(before.map((b) => [b.endpoint, b.weight])).toEqual([['aggTrades', 4], ...Array.from({ length: pagesNeeded }, () => ['historicalTrades', 25])]);
    expect(mock.stats().venues.binance).toMatchObject({ weightUsed: 4 + 25 * pagesNeeded, overLimitRequests: 0, responses4xx: 0 });

    clock.advance(MINUTE);
    const cursor = pages.at(-1)!.cursor;
    const next = await collect(adapter.fetchTrades('BTC/USDT', { cursor }));
    const newer = truth(model, want.at(-1)!.timeMs, Number.POSITIVE_INFINITY, T0 + MINUTE).filter((x) => x.id > cursor);
    expect(newer[0]!.id).toBe(cursor + 1);
    expect(idsOf(next)).toEqual(newer);
  });

  it('binance: untilMs ends the walk at the first trade at or after it (a backfill chunk)', async () => {
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance'), clock, maxTradesPerPage: 300 });
    const sinceMs = T0 - 10 * MINUTE;
    const untilMs = sinceMs + 2 * MINUTE;
    const got = idsOf(await collect(adapter.fetchTrades('ETH/USDT', { sinceMs }, { untilMs })));
    expect(got).toEqual(truth(binanceModel('ETHUSDT', SEED), sinceMs, untilMs, T0));
    expect(got.length).toBeGreaterThan(600);
  });

  it('kraken (CCXT engine): fetchTrades by since, 1000 a page; the next walk starts at the last trade time', async () => {
    const before: BeforeRequestInfo[] = [];
    const adapter = createVenueAdapter('kraken', { baseUrl: mock.baseUrl('kraken'), clock, hooks: { beforeRequest: async (i) => void before.push(i) } });
    expect(isTradeSource(adapter) && adapter.tradeCursor).toBe('time');
    expect(adapter.maxTradesPerPage).toBe(1000);
    const model = krakenModel('BTC/USD', SEED);
    const sinceMs = T0 - 3 * MINUTE;
    const pages = await collect(adapter.fetchTrades('BTC/USD', { sinceMs }));
    const want = truth(model, sinceMs, Number.POSITIVE_INFINITY, T0);
    expect(want.length).toBeGreaterThan(1000);
    expect(idsOf(pages)).toEqual(want);
    expect(pages.every((p) => p.holes.length === 0)).toBe(true);
    expect(pages.flatMap((p) => p.envelopes.map((e) => e.messageId))).toEqual(want.map((t) => `kraken:BTC/USD:trade:${t.id}`));
    expect(pages.at(-1)!.cursor).toBe(want.at(-1)!.timeMs);
    expect(before.filter((b) => b.endpoint === 'Trades').length).toBe(Math.ceil(want.length / 1000));
    expect(before.every((b) => b.weight === 1)).toBe(true);

    clock.advance(MINUTE);
    const next = idsOf(await collect(adapter.fetchTrades('BTC/USD', { cursor: pages.at(-1)!.cursor })));
    const lastId = want.at(-1)!.id;
    // the last stored instant comes again (the sink keeps one copy); everything after it once
    expect(next.filter((x) => x.id > lastId)).toEqual(truth(model, sinceMs, Number.POSITIVE_INFINITY, T0 + MINUTE).filter((x) => x.id > lastId));
    expect(next.filter((x) => x.id <= lastId).every((x) => x.timeMs === want.at(-1)!.timeMs)).toBe(true);
    expect(mock.stats().venues.kraken).toMatchObject({ overLimitRequests: 0 });
  });

  it("kraken (CCXT engine): a resumed walk whose first answer no longer holds the cursor's trade reports the time missing", async () => {
    // Kraken behind a proxy that keeps only the trades from the last whole minute on (a retention the cursor fell behind)
    const cutoffMs = T0 - (T0 % MINUTE) - MINUTE;
    const origin = new URL(mock.baseUrl('kraken')).origin;
    const proxy = createServer((req, res) => {
      void (async () => {
        // a `since` before the retention is answered from the oldest trade kept
        const url = new URL(req.url ?? '/', origin);
        const since = url.searchParams.get('since');
        if (url.pathname.endsWith('/0/public/Trades') && since !== null && Number(since) * 1000 < cutoffMs)
          url.searchParams.set('since', String(Math.ceil(cutoffMs / 1000)));
        const answer = await fetch(url);
        const body = await answer.text();
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(body);
      })();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${new URL(mock.baseUrl('kraken')).pathname}`;
      const adapter = createVenueAdapter('kraken', { baseUrl: base, clock });
      const model = krakenModel('BTC/USD', SEED);
      const stored = truth(model, T0 - 3 * MINUTE, T0 - 3 * MINUTE + 500, T0).at(-1)!;
      const pages = await collect(adapter.fetchTrades('BTC/USD', { cursor: stored.timeMs }));
      const want = truth(model, cutoffMs, Number.POSITIVE_INFINITY, T0);
      expect(idsOf(pages)).toEqual(want);
      expect(pages[0]!.missing).toEqual({ fromMs: stored.timeMs + 1, toMs: want[0]!.timeMs });
      expect(pages.slice(1).every((p) => p.missing === undefined)).toBe(true);
      // without the retention the same walk reports nothing missing
      const direct = await collect(createVenueAdapter('kraken', { baseUrl: mock.baseUrl('kraken'), clock }).fetchTrades('BTC/USD', { cursor: stored.timeMs }));
      expect(direct.every((p) => p.missing === undefined)).toBe(true);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('coinbase (CCXT engine): by trade id with before=<cursor>; a first poll starts at the newest page', async () => {
    const adapter = createVenueAdapter('coinbase', { baseUrl: mock.baseUrl('coinbase'), clock });
    expect(isTradeSource(adapter) && adapter.tradeCursor).toBe('id');
    const model = coinbaseModel('BTC/USD', SEED);
    const sinceMs = T0 - 20_000;
    const first = await collect(adapter.fetchTrades('BTC/USD', { sinceMs }));
    expect(idsOf(first)).toEqual(truth(model, sinceMs, Number.POSITIVE_INFINITY, T0));
    const cursor = first.at(-1)!.cursor;
    expect(cursor).toBe(Number(first.at(-1)!.trades.at(-1)!.tradeId));
    clock.advance(3 * MINUTE);
    const next = await collect(adapter.fetchTrades('BTC/USD', { cursor }));
    const want = truth(model, sinceMs, Number.POSITIVE_INFINITY, T0 + 3 * MINUTE).filter((x) => x.id > cursor);
    expect(want.length).toBeGreaterThan(1000);
    expect(idsOf(next)).toEqual(want);
    expect(next.length).toBe(Math.ceil(want.length / 1000));
    expect(next.flatMap((p) => p.envelopes.map((e) => e.messageId))).toEqual(want.map((t) => `coinbase:BTC/USD:trade:${t.id}`));
    expect(mock.stats().venues.coinbase).toMatchObject({ overLimitRequests: 0, responses4xx: 0 });
  });

  it('trades are a job kind of binance, kraken and coinbase; not of venues without a public trades endpoint', () => {
    const kinds = (venue: string): string[] => supportedJobTypes(createVenueAdapter(venue, { baseUrl: 'http://127.0.0.1' }));
    for (const venue of ['binance', 'kraken', 'coinbase', 'ccxt-bitstamp']) expect(kinds(venue)).toContain('trades');
    for (const venue of ['polymarket', 'limitless', 'polygon', 'alpaca', 'fred', 'xetra', 'finnhub']) expect(kinds(venue)).not.toContain('trades');
  });
});

describe('BinanceAdapter trades against documented bodies', () => {
  let server: FixtureServer;
  afterEach(() => server.close());

  it('the first trade id is looked for an hour window at a time (aggTrades refuses wider ones)', async () => {
    const sinceMs = Date.UTC(2024, 0, 1);
    // no aggregate in the first two hours after since: the third window finds one
    server = await FixtureServer.start((req) => {
      if (req.path === '/api/v3/historicalTrades') return { body: fixture('binance/historical-trades-hole.json') };
      if (req.path !== '/api/v3/aggTrades') return undefined;
      const found = Number(req.query.get('endTime')) >= sinceMs + 2 * 3_600_000;
      return { body: found ? '[{"a":7,"p":"4.00000100","q":"12.00000000","f":28457,"l":28457,"T":1704074400500,"m":true,"M":true}]' : '[]' };
    });
    const adapter = new BinanceAdapter({ baseUrl: server.url });
    const pages = await collect(adapter.fetchTrades('BNB/BTC', { sinceMs }, { untilMs: sinceMs + 5 * 3_600_000 }));
    const windows = server.requests
      .filter((r) => r.path === '/api/v3/aggTrades')
      .map((r) => [Number(r.query.get('startTime')) - sinceMs, Number(r.query.get('endTime')) - sinceMs, r.query.get('limit')]);
    expect(windows).toEqual([
      [0, 3_600_000 - 1, '1'],
      [3_600_000, 2 * 3_600_000 - 1, '1'],
      [2 * 3_600_000, 3 * 3_600_000 - 1, '1'],
    ]);
    expect(server.requests.at(-1)!.query.get('fromId')).toBe('28457');
    expect(pages.flatMap((p) => p.trades.map((t) => t.tradeId))).toEqual(['28457', '28460']);
  });

  it('an id the answer skips is a hole; ids going back are a malformed page', async () => {
    server = await FixtureServer.start((req) =>
      req.path === '/api/v3/historicalTrades' ? { body: fixture('binance/historical-trades-hole.json') } : undefined,
    );
    const adapter = new BinanceAdapter({ baseUrl: server.url });
    const pages = await collect(adapter.fetchTrades('BNB/BTC', { cursor: 28456 }));
    expect(pages).toHaveLength(1);
    expect(pages[0]!.holes).toEqual([{ fromId: 28458, toId: 28459 }]);
    expect(pages[0]!.cursor).toBe(28460);
    expect(pages[0]!.trades.map((t) => [t.tradeId, t.price, t.size, t.side])).toEqual([
      ['28457', '4.00000100', '12.00000000', 'sell'],
      ['28460', '4.00000200', '1.00000000', 'buy'],
    ]);
    expect(Object.fromEntries(server.requests[0]!.query)).toEqual({ symbol: 'BNBBTC', fromId: '28457', limit: '1000' });
    const err = await caught(() => collect(adapter.fetchTrades('BNB/BTC', { cursor: 28458 })));
    expect(err).toBeInstanceOf(MalformedPayloadError);
  });
});
