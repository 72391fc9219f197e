import { ManualClock } from '@tickfleet/testkit';
import { marketTokenIds, polymarketMarkets } from '../data/markets.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { limitlessMarkets } from './limitless-markets.js';

const NOW = Date.UTC(2026, 5, 1, 12);

async function get(url: string): Promise<{ status: number; body: unknown; ms: number }> {
  const started = performance.now();
  const r = await fetch(url);
  return { status: r.status, body: JSON.parse(await r.text()) as unknown, ms: performance.now() - started };
}

/** The scenario controls the order-book lifecycle tests use: hidden markets, market ends, failing books, slow listings. */
describe('market lifecycle scenario controls (Polymarket, Limitless)', () => {
  let mv: MockVenue;
  const clock = new ManualClock(NOW);
  beforeAll(async () => {
    mv = await startMockVenue({ clock, scenario: { venues: { polymarket: { markets: 3 }, limitless: { markets: 3, limit: { enabled: false } } } } });
  });
  afterAll(() => mv.stop());

  test('Polymarket: hidden markets leave the listing, an ended market is closed with 404 books, failing books answer 500', async () => {
    const [m0, m1, m2] = polymarketMarkets(42, 3);
    const listing = `${mv.baseUrl('polymarket')}/markets?closed=false`;
    const ids = async () => ((await get(listing)).body as Array<{ id: string }>).map((m) => m.id);
    mv.patchScenario({ venues: { polymarket: { hiddenMarkets: [m0!.id], marketEnds: { [m1!.id]: NOW + 1000 }, failingBooks: [marketTokenIds(m2!)[0]!] } } });
    expect(await ids()).toEqual([m1!.id, m2!.id]);
    const all = (await get(`${mv.baseUrl('polymarket')}/markets`)).body as Array<{ id: string; endDate: string; closed: boolean }>;
    expect(all.find((m) => m.id === m1!.id)).toMatchObject({ endDate: new Date(NOW + 1000).toISOString(), closed: false });
    const book = (token: string) => get(`${mv.baseUrl('polymarket')}/book?token_id=${token}`);
    expect((await book(marketTokenIds(m0!)[0]!)).status).toBe(200); // hidden from the listing, still traded
    expect((await book(marketTokenIds(m1!)[0]!)).status).toBe(200);
    expect(await book(marketTokenIds(m2!)[0]!)).toMatchObject({ status: 500, body: { error: 'Internal Server Error' } });
    expect((await book(marketTokenIds(m2!)[1]!)).status).toBe(200);

    clock.advance(1000);
    expect(await ids()).toEqual([m2!.id]);
    expect(await book(marketTokenIds(m1!)[0]!)).toMatchObject({ status: 404, body: { error: 'No orderbook exists for the requested token id' } });
    mv.patchScenario({ venues: { polymarket: { hiddenMarkets: [], marketEnds: {}, failingBooks: [] } } });
  });

  test('Limitless: hidden and expired markets leave /markets/active; listingDelayMs holds the listing; failing books answer 500', async () => {
    const [m0, m1] = limitlessMarkets(42, 3);
    clock.advance(1);
    const now = clock.now();
    mv.patchScenario({ venues: { limitless: { hiddenMarkets: [String(m0!.id)], marketEnds: { [String(m1!.id)]: now }, listingDelayMs: 300 } } });
    const page = await get(`${mv.baseUrl('limitless')}/markets/active`);
    expect((page.body as { data: Array<{ id: number }>; totalMarketsCount: number }).data.map((m) => m.id)).toEqual([limitlessMarkets(42, 3)[2]!.id]);
    expect(page.ms).toBeGreaterThanOrEqual(300);
    const book = await get(`${mv.baseUrl('limitless')}/markets/${m0!.slug}/orderbook`);
    expect(book.status).toBe(200);
    mv.patchScenario({ venues: { limitless: { failingBooks: [m0!.slug] } } });
    expect(await get(`${mv.baseUrl('limitless')}/markets/${m0!.slug}/orderbook`)).toMatchObject({
      status: 500,
      body: { statusCode: 500, message: 'Internal server error' },
    });
  });
});
