import { ManualClock } from '@tickfleet/testkit';
import { bookAt } from '../data/books.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { limitlessBookSlugs, limitlessMarkets } from './limitless-markets.js';

const NOW = Date.UTC(2024, 0, 15, 8, 0, 0, 250);

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string): Promise<{ status: number; headers: Headers; json: () => any }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: () => JSON.parse(text) };
}

describe('limitless emulation', () => {
  describe('active markets and books', () => {
    let mv: MockVenue;
    let base: string;
    beforeAll(async () => {
      // every request at one manual instant: the venue's 300 ms spacing is off here (tested below)
      mv = await startMockVenue({ clock: new ManualClock(NOW), scenario: { seed: 7, venues: { limitless: { markets: 30, limit: { enabled: false } } } } });
      base = mv.baseUrl('limitless');
    });
    afterAll(() => mv.stop());

    test('GET /markets/active pages from 1 with limit (default and maximum 25) and counts every market', async () => {
      const all = limitlessMarkets(7, 30);
      const page1 = (await get(`${base}/markets/active?page=1&limit=12`)).json();
      const page2 = (await get(`${base}/markets/active?page=2&limit=12`)).json();
      const page3 = (await get(`${base}/markets/active?page=3&limit=12`)).json();
      expect(page1.totalMarketsCount).toBe(30);
      expect([...page1.data, ...page2.data, ...page3.data]).toEqual(all);
      expect(page3.data).toHaveLength(6);
      expect((await get(`${base}/markets/active?page=4&limit=12`)).json()).toEqual({ data: [], totalMarketsCount: 30 });
      expect((await get(`${base}/markets/active`)).json().data).toEqual(all.slice(0, 25));
      // CLOB singles, AMM markets without books, and group markets whose children carry the books
      expect(new Set(all.map((m) => `${m.tradeType}/${m.marketType}`))).toEqual(new Set(['clob/single', 'amm/single', 'clob/group']));
      expect(page1.data[0]).toMatchObject({ tradeType: 'clob', marketType: 'single', tokens: { yes: expect.stringMatching(/^\d{77}$/) } });
    });

    test('every market (group children too) carries the fields the SDK Market type requires', async () => {
      const page = (await get(`${base}/markets/active?page=1&limit=25`)).json();
      const required = ['id', 'slug', 'title', 'proxyTitle', 'collateralToken', 'expirationDate', 'expirationTimestamp', 'createdAt', 'updatedAt'];
      const more = ['categories', 'status', 'creator', 'tags', 'tradeType', 'marketType', 'priorityIndex', 'metadata'];
      const all = page.data.flatMap((m: { markets?: unknown[] }) => [m, ...(m.markets ?? [])]);
      expect(all.length).toBeGreaterThan(25);
      for (const m of all) {
        for (const key of [...required, ...more]) expect([m.slug, key, m[key] !== undefined]).toEqual([m.slug, key, true]);
        expect(m).toMatchObject({ proxyTitle: null, collateralToken: { decimals: 6, symbol: 'USDC' }, creator: { name: 'Limitless' }, priorityIndex: 0 });
        expect(Date.parse(m.createdAt)).toBeLessThan(Date.parse(m.updatedAt));
        expect(m.metadata).toEqual({ fee: true, isBannered: false });
      }
    });

    test('GET /markets/search finds listed markets by title or slug, as CCXT loads them', async () => {
      const all = limitlessMarkets(7, 30);
      const subject = all[0]!.slug.split('-')[0]!;
      const want = all.filter(
        (m) => m.title.toLowerCase().includes(subject) || m.slug.includes(subject) || (m.markets ?? []).some((c) => c.slug.includes(subject)),
      );
      const r = await get(`${base}/markets/search?query=${subject.toUpperCase()}&limit=50`);
      expect(r.status).toBe(200);
      expect(r.json()).toEqual({ markets: want, totalMarketsCount: want.length });
      expect(want.length).toBeGreaterThan(1);
      expect(want.length).toBeLessThan(30);
      const paged = (await get(`${base}/markets/search?query=${subject}&limit=1&page=2`)).json();
      expect(paged).toEqual({ markets: [want[1]], totalMarketsCount: want.length });
      expect((await get(`${base}/markets/search?query=no-such-words`)).json()).toEqual({ markets: [], totalMarketsCount: 0 });
      const empty = await get(`${base}/markets/search?limit=0`);
      expect([empty.status, empty.json().message]).toEqual([400, ['query should not be empty', 'limit must not be less than 1']]);
    });

    test('a page size above 25 or a page below 1 is refused with the NestJS validation body', async () => {
      const tooBig = await get(`${base}/markets/active?page=1&limit=26`);
      expect(tooBig.status).toBe(400);
      expect(tooBig.json()).toEqual({ message: ['limit must not be greater than 25'], error: 'Bad Request', statusCode: 400 });
      const zero = await get(`${base}/markets/active?page=0&limit=x`);
      expect(zero.status).toBe(400);
      expect(zero.json().message).toEqual(['page must not be less than 1', 'limit must not be less than 1']);
    });

    test('GET /markets/{slug}/orderbook: deterministic YES book, best first, numbers, sizes in millionths; AMM 400, unknown 404', async () => {
      const markets = limitlessMarkets(7, 30);
      const slugs = limitlessBookSlugs(markets);
      const group = markets.find((m) => m.marketType === 'group')!;
      expect(slugs).toContain(group.markets![1]!.slug);
      const slug = group.markets![1]!.slug;
      const r = await get(`${base}/markets/${slug}/orderbook`);
      expect(r.status).toBe(200);
      const body = r.json();
      const snap = bookAt('limitless', slug, NOW, 7);
      expect(body.tokenId).toBe(group.markets![1]!.tokens!.yes);
      expect(body.bids).toEqual(snap.bids.map(([p, s]) => ({ price: Number(p), size: Math.round(Number(s) * 1e6), side: 'BUY' })));
      expect(body.asks).toEqual(snap.asks.map(([p, s]) => ({ price: Number(p), size: Math.round(Number(s) * 1e6), side: 'SELL' })));
      expect(body.bids[0].price).toBeLessThan(body.asks[0].price);
      expect(body).toMatchObject({ maxSpread: '0.05', minSize: '1000000', adjustedMidpoint: expect.any(Number), lastTradePrice: expect.any(Number) });
      // the same second, the same book
      expect((await get(`${base}/markets/${slug}/orderbook`)).json()).toEqual(body);

      const amm = markets.find((m) => m.tradeType === 'amm')!;
      const noBook = await get(`${base}/markets/${amm.slug}/orderbook`);
      expect(noBook.status).toBe(400);
      expect(noBook.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      const unknown = await get(`${base}/markets/no-such-market/orderbook`);
      expect(unknown.status).toBe(404);
      expect(unknown.json()).toEqual({ message: 'Market not found', error: 'Not Found', statusCode: 404 });
    });
  });

  test('the documented limit: calls at least 300 ms apart, else the throttler 429 with Retry-After', async () => {
    const clock = new ManualClock(NOW);
    const mv = await startMockVenue({ clock });
    try {
      const url = `${mv.baseUrl('limitless')}/markets/active?page=1&limit=5`;
      expect((await get(url)).status).toBe(200);
      const refused = await get(url);
      expect(refused.status).toBe(429);
      expect(refused.json()).toEqual({ statusCode: 429, message: 'ThrottlerException: Too Many Requests' });
      expect(refused.headers.get('retry-after')).toBe('1');
      clock.advance(299);
      expect((await get(url)).status).toBe(429);
      clock.advance(1);
      expect((await get(url)).status).toBe(200);
      expect(mv.stats().venues.limitless).toMatchObject({
        requests: 4,
        weightUsed: 2,
        limit: 1,
        windowMs: 300,
        maxWindowWeight: 1,
        responses2xx: 2,
        responses429: 2,
      });
    } finally {
      await mv.stop();
    }
  });

  test('the documented limit: at most 2 requests served at once, a third meanwhile is a 429', async () => {
    // spacing off (a long window allowance), answers held 2 s: the three requests overlap
    const mv = await startMockVenue({ clock: new ManualClock(NOW), scenario: { venues: { limitless: { limit: { requests: 100 }, latencyMs: 2000 } } } });
    try {
      const url = `${mv.baseUrl('limitless')}/markets/active?page=1&limit=5`;
      const statuses = (await Promise.all(Array.from({ length: 3 }, () => get(url)))).map((r) => r.status).sort();
      expect(statuses).toEqual([200, 200, 429]);
      const stats = mv.stats().venues.limitless;
      expect(stats).toMatchObject({ overLimitRequests: 1, responses429: 1 });
      expect(stats.extra).toEqual({ maxConcurrent: 2, maxInFlight: 2, concurrencyRejected: 1 });
      // once answered, the slots are free again
      expect((await get(url)).status).toBe(200);
    } finally {
      await mv.stop();
    }
  });
});
