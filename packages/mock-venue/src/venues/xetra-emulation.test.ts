import { ManualClock } from '@tickfleet/testkit';
import { gunzipSync } from 'node:zlib';
import { tradesInFile, xetraFileName, xetraFilesBetween } from '../data/trades.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { XETRA_LISTING_MS } from './xetra-emulation.js';

const NOW = Date.UTC(2024, 0, 15, 10, 30, 20);

async function get(url: string): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const r = await fetch(url);
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

describe('xetra emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let base: string;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    mv = await startMockVenue({ clock, scenario: { venues: { xetra: { limit: { requests: 100 } } } } });
    base = mv.baseUrl('xetra');
  });
  afterEach(() => mv.stop());

  test('listing: the last day of closed minutes with trades; download: gzip NDJSON of exactly tradesInFile', async () => {
    const r = await get(`${base}/DETR-posttrade`);
    expect(r.status).toBe(200);
    const listing = JSON.parse(r.body.toString());
    const closedTo = Date.UTC(2024, 0, 15, 10, 30);
    expect(listing).toEqual({ SourcePrefix: 'DETR-posttrade', CurrentFiles: xetraFilesBetween('DETR', closedTo - XETRA_LISTING_MS, closedTo, 42) });
    expect(listing.CurrentFiles.at(-1)).toBe(xetraFileName('DETR', Date.UTC(2024, 0, 15, 10, 29)));
    const name = listing.CurrentFiles.at(-1) as string;
    const file = await get(`${base}/download/${name}`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('application/gzip');
    const lines = gunzipSync(file.body).toString().trim().split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual(tradesInFile(name, 42));
    const frankfurt = JSON.parse((await get(`${base}/DFRA-posttrade`)).body.toString());
    expect(frankfurt.SourcePrefix).toBe('DFRA-posttrade');
  });

  test('unknown, malformed and not-yet-closed file names are 404', async () => {
    expect((await get(`${base}/download/DETR-posttrade-2024-01-15T10_30.json.gz`)).status).toBe(404);
    expect((await get(`${base}/download/nope.json.gz`)).status).toBe(404);
    expect((await get(`${base}/XXXX-posttrade`)).status).toBe(404);
    expect(mv.stats().venues.xetra.responses4xx).toBe(3);
  });

  test('limits per market: 5 requests per 2 s window for each market on its own, then 429 until its next window', async () => {
    mv.patchScenario({ venues: { xetra: { limit: { requests: 5, windowMs: 2000 } } } });
    // NOW is 10:30:20.000, the start of a 2 s window
    for (let i = 0; i < 5; i++) expect((await get(`${base}/DETR-posttrade`)).status).toBe(200);
    const r = await get(`${base}/DETR-posttrade`);
    expect(r.status).toBe(429);
    expect(JSON.parse(r.body.toString())).toEqual({ message: 'Too Many Requests' });
    // DETR is spent, the other markets are not: a DETR file download counts against DETR, DFRA's listing against DFRA.
    const detrFile = xetraFileName('DETR', Date.UTC(2024, 0, 15, 10, 29));
    expect((await get(`${base}/download/${detrFile}`)).status).toBe(429);
    for (let i = 0; i < 5; i++) expect((await get(`${base}/DFRA-posttrade`)).status).toBe(200);
    expect((await get(`${base}/DFRA-posttrade`)).status).toBe(429);
    clock.advance(1999);
    expect((await get(`${base}/DETR-posttrade`)).status).toBe(429);
    clock.advance(1);
    expect((await get(`${base}/DETR-posttrade`)).status).toBe(200);
    const { scopes, ...venue } = mv.stats().venues.xetra;
    // the venue's figures add up its markets
    expect(venue).toMatchObject({ requests: 15, weightUsed: 11, overLimitRequests: 4, responses429: 4 });
    expect(scopes?.DETR).toMatchObject({ requests: 9, weightUsed: 6, maxWindowWeight: 5, overLimitRequests: 3, limit: 5, windowMs: 2000 });
    expect(scopes?.DFRA).toMatchObject({ requests: 6, weightUsed: 5, maxWindowWeight: 5, overLimitRequests: 1 });
    expect(scopes?.DETR?.arrivals).toEqual([...Array(5).fill(NOW), NOW + 2000]);
    expect(Object.keys(scopes ?? {})).toEqual(['DETR', 'DFRA']);
  });
});
