import { createHash } from 'node:crypto';
import { ManualClock } from '@tickfleet/testkit';
import { bookAt } from '../data/books.js';
import { marketTokenIds, polymarketMarkets } from '../data/markets.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';

const NOW = Date.UTC(2024, 0, 15, 8, 0, 0, 250);

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string): Promise<{ status: number; headers: Headers; json: () => any }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: () => JSON.parse(text) };
}

describe('polymarket emulation', () => {
  describe('discovery and books', () => {
    let mv: MockVenue;
    let base: string;
    beforeAll(async () => {
      mv = await startMockVenue({ clock: new ManualClock(NOW), scenario: { seed: 7, venues: { polymarket: { markets: 12 } } } });
      base = mv.baseUrl('polymarket');
    });
    afterAll(() => mv.stop());

    test('GET /markets filters active/closed and pages with limit/offset', async () => {
      const all = polymarketMarkets(7, 12);
      const open = all.filter((m) => !m.closed);
      const page1 = (await get(`${base}/markets?active=true&closed=false&limit=5&offset=0`)).json();
      const page2 = (await get(`${base}/markets?active=true&closed=false&limit=5&offset=5`)).json();
      expect([...page1, ...page2]).toEqual(open);
      expect(page1[0]).toMatchObject({ active: true, closed: false, enableOrderBook: true });
      expect(typeof page1[0].clobTokenIds).toBe('string');
      expect((await get(`${base}/markets?closed=true`)).json()).toHaveLength(2);
      expect((await get(`${base}/markets?limit=x`)).status).toBe(400);
    });

    test('POST /books: the books asked for in order, a token without a book left out, 400 past 500 items or on a bad body', async () => {
      const markets = polymarketMarkets(7, 12);
      const tokens = [marketTokenIds(markets[5]!)[0]!, marketTokenIds(markets[2]!)[1]!];
      const post = async (body: string) => {
        const r = await fetch(`${base}/books`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        return { status: r.status, json: (await r.json()) as Array<{ asset_id: string; hash: string; timestamp: string }> };
      };
      const r = await post(JSON.stringify([{ token_id: tokens[0] }, { token_id: '999' }, { token_id: tokens[1], side: 'BUY' }]));
      expect(r.status).toBe(200);
      expect(r.json.map((b) => b.asset_id)).toEqual(tokens);
      const single = (await get(`${base}/book?token_id=${tokens[1]}`)).json();
      expect(r.json[1]).toEqual(single);
      const tooMany = Array.from({ length: 501 }, () => ({ token_id: tokens[0] }));
      expect((await post(JSON.stringify(tooMany))).status).toBe(400);
      expect((await post('[{"token":"1"}]')).status).toBe(400);
      expect((await post('not json')).status).toBe(400);
      expect((await post('[]')).status).toBe(400);
      expect(mv.stats().venues.polymarket.groups).toMatchObject({ books: { limit: 500, windowMs: 10_000, weightUsed: 5 } });
    });

    test('GET /book: documented fields, bids ascending and asks descending (best last), unknown token 404', async () => {
      const market = polymarketMarkets(7, 12)[3]!;
      const token = marketTokenIds(market)[1]!;
      const r = await get(`${base}/book?token_id=${token}`);
      expect(r.status).toBe(200);
      const body = r.json();
      const snap = bookAt('polymarket', token, NOW, 7);
      expect(Object.keys(body)).toEqual([
        'market',
        'asset_id',
        'timestamp',
        'hash',
        'bids',
        'asks',
        'min_order_size',
        'tick_size',
        'neg_risk',
        'last_trade_price',
      ]);
      expect(body).toMatchObject({ market: market.conditionId, asset_id: token, timestamp: String(NOW), min_order_size: '5' });
      expect(['0.01', '0.001']).toContain(body.tick_size);
      expect(typeof body.neg_risk).toBe('boolean');
      // the CLOB's hash: SHA-1 of the summary's JSON with hash empty (as clob-client's getOrderBookHash)
      expect(body.hash).toBe(
        createHash('sha1')
          .update(JSON.stringify({ ...body, hash: '' }))
          .digest('hex'),
      );
      expect(body.bids).toEqual(snap.bids.map(([price, size]) => ({ price, size })).reverse());
      expect(body.asks).toEqual(snap.asks.map(([price, size]) => ({ price, size })).reverse());
      expect([body.bids.at(-1).price, body.asks.at(-1).price]).toContain(body.last_trade_price);
      expect(Number(body.bids.at(-1).price)).toBeLessThan(Number(body.asks.at(-1).price));
      // every level sits on the market's tick
      const ticks = [...body.bids, ...body.asks].map((l: { price: string }) => Number(l.price) / Number(body.tick_size));
      for (const t of ticks) expect(Math.abs(t - Math.round(t))).toBeLessThan(1e-9);
      // tick sizes differ across markets (about one in four quotes in tenths of a cent)
      const sizes = new Set<string>();
      for (const m of polymarketMarkets(7, 12)) sizes.add((await get(`${base}/book?token_id=${marketTokenIds(m)[0]}`)).json().tick_size);
      expect([...sizes].sort()).toEqual(['0.001', '0.01']);
      const unknown = await get(`${base}/book?token_id=123`);
      expect(unknown.status).toBe(404);
      expect(unknown.json()).toEqual({ error: 'No orderbook exists for the requested token id' });
      for (const query of ['', '?token_id=', '?token_id=0xabc']) {
        const invalid = await get(`${base}/book${query}`);
        expect([invalid.status, invalid.json()]).toEqual([400, { error: 'Invalid token id' }]);
      }
    });
  });

  test('over the sliding limit, requests are queued first and refused with 429 only beyond maxDelayMs', async () => {
    // a manual clock: every arrival sees the same instant, the delay timer runs in real time
    const clock = new ManualClock(NOW);
    const mv = await startMockVenue({ clock, scenario: { venues: { polymarket: { limit: { requests: 2, windowMs: 1000, maxDelayMs: 1500 } } } } });
    try {
      const token = marketTokenIds(polymarketMarkets(42, 20)[0]!)[0]!;
      const url = `${mv.baseUrl('polymarket')}/book?token_id=${token}`;
      const sentAt = performance.now();
      const results = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const r = await fetch(url);
          await r.text();
          return { status: r.status, afterMs: performance.now() - sentAt };
        }),
      );
      const ok = results.filter((r) => r.status === 200).sort((a, b) => a.afterMs - b.afterMs);
      const refused = results.filter((r) => r.status === 429);
      // two fit the window; two are queued 1000 ms until the first two leave the sliding window;
      // the next room opens 2000 ms away, beyond maxDelayMs, so the other six are refused at once
      expect(ok).toHaveLength(4);
      expect(refused).toHaveLength(6);
      expect(ok[2]!.afterMs).toBeGreaterThanOrEqual(990);
      expect(ok[3]!.afterMs).toBeGreaterThanOrEqual(990);
      const pm = mv.stats().venues.polymarket;
      expect(pm).toMatchObject({ requests: 10, weightUsed: 4, maxWindowWeight: 2, delayedRequests: 2, overLimitRequests: 8, responses2xx: 4, responses429: 6 });
      expect(pm.groups?.clob).toMatchObject({ limit: 2, windowMs: 1000, sliding: true, maxWindowWeight: 2, overLimitRequests: 8, delayedRequests: 2 });
    } finally {
      await mv.stop();
    }
  });

  test('the window slides: a burst across an aligned boundary is throttled, and Gamma has its own limit', async () => {
    // 900 ms into an aligned 1 s window
    const clock = new ManualClock(Math.floor(NOW / 1000) * 1000 + 900);
    const mv = await startMockVenue({
      clock,
      scenario: {
        venues: { polymarket: { limit: { requests: 3, windowMs: 1000, maxDelayMs: 0 }, gammaLimit: { requests: 2, windowMs: 1000, maxDelayMs: 0 } } },
      },
    });
    try {
      const base = mv.baseUrl('polymarket');
      const token = marketTokenIds(polymarketMarkets(42, 20)[0]!)[0]!;
      const book = async (): Promise<number> => (await get(`${base}/book?token_id=${token}`)).status;
      const markets = async (): Promise<number> => (await get(`${base}/markets?limit=1`)).status;
      expect([await book(), await book(), await book()]).toEqual([200, 200, 200]);
      // 200 ms later a new aligned window has begun, but the sliding one still holds the three
      clock.advance(200);
      expect(await book()).toBe(429);
      // Gamma is counted apart: the CLOB being full does not stop discovery, and Gamma's own 2 are enforced
      expect([await markets(), await markets(), await markets()]).toEqual([200, 200, 429]);
      clock.advance(800);
      expect(await book()).toBe(200);
      const { groups, maxWindowWeight } = mv.stats().venues.polymarket;
      expect(maxWindowWeight).toBe(3);
      expect(groups?.clob).toMatchObject({ limit: 3, weightUsed: 4, maxWindowWeight: 3, overLimitRequests: 1 });
      expect(groups?.gamma).toMatchObject({ limit: 2, weightUsed: 2, maxWindowWeight: 2, overLimitRequests: 1 });
    } finally {
      await mv.stop();
    }
  });

  test('defaults are the documented limits: CLOB /book 1500 and Gamma /markets 300 per sliding 10 s', async () => {
    const mv = await startMockVenue({ clock: new ManualClock(NOW) });
    try {
      const { groups, limit, windowMs } = mv.stats().venues.polymarket;
      expect({ limit, windowMs }).toEqual({ limit: 1500, windowMs: 10_000 });
      expect(groups?.gamma).toMatchObject({ limit: 300, windowMs: 10_000, sliding: true });
    } finally {
      await mv.stop();
    }
  });
});
