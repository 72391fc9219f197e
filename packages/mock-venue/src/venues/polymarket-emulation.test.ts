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

    test('GET /book: documented fields, bids ascending and asks descending (best last), unknown token 404', async () => {
      const market = polymarketMarkets(7, 12)[3]!;
      const token = marketTokenIds(market)[1]!;
      const r = await get(`${base}/book?token_id=${token}`);
      expect(r.status).toBe(200);
      const body = r.json();
      const snap = bookAt('polymarket', token, NOW, 7);
      expect(body).toMatchObject({
        market: market.conditionId,
        asset_id: token,
        timestamp: String(NOW),
        min_order_size: '5',
        tick_size: '0.01',
        neg_risk: false,
      });
      expect(body.hash).toMatch(/^[0-9a-f]{40}$/);
      expect(body.bids).toEqual(snap.bids.map(([price, size]) => ({ price, size })).reverse());
      expect(body.asks).toEqual(snap.asks.map(([price, size]) => ({ price, size })).reverse());
      expect(Number(body.bids.at(-1).price)).toBeLessThan(Number(body.asks.at(-1).price));
      const unknown = await get(`${base}/book?token_id=123`);
      expect(unknown.status).toBe(404);
      expect(unknown.json()).toEqual({ error: 'No orderbook exists for the requested token id' });
    });
  });

  test('over the limit, requests are delayed into the next window first and refused with 429 only beyond maxDelayMs', async () => {
    // a manual clock 50 ms into a window: every arrival sees the same window, the delay timer runs in real time
    const clock = new ManualClock(NOW - 200);
    const mv = await startMockVenue({ clock, scenario: { venues: { polymarket: { limit: { requests: 2, windowMs: 1000, maxDelayMs: 1500 } } } } });
    try {
      const url = `${mv.baseUrl('polymarket')}/markets?limit=1`;
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
      // two fit the window; two are held 950 ms until the next one opens (not rejected);
      // the window after that opens 1950 ms away, beyond maxDelayMs, so the other six are refused at once
      expect(ok).toHaveLength(4);
      expect(refused).toHaveLength(6);
      // Which were held is the emulation's count (delayedRequests below), not a wall-clock bound
      // on the others; the held ones waited for the next window.
      expect(ok[2]!.afterMs).toBeGreaterThanOrEqual(940);
      expect(ok[3]!.afterMs).toBeGreaterThanOrEqual(940);
      expect(mv.stats().venues.polymarket.windows).toEqual([
        { startMs: NOW - 250, weight: 2 },
        { startMs: NOW + 750, weight: 2 },
      ]);
      expect(mv.stats().venues.polymarket).toMatchObject({
        requests: 10,
        weightUsed: 4,
        maxWindowWeight: 2,
        delayedRequests: 2,
        overLimitRequests: 8,
        responses2xx: 4,
        responses429: 6,
      });
    } finally {
      await mv.stop();
    }
  });
});
