import { MalformedPayloadError, UnrecoverableError, type Trade } from '@tickfleet/core';
import { startMockVenue, tradesInFile, xetraFilesBetween, type MockVenue, type XetraSource } from '@tickfleet/mock-venue';
import { XetraAdapter, type FileRef } from '../src/index.js';
import { caught } from './async-helpers.js';

const SEED = 3;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** What the emulation lists for `source` on `date` when asked at `nowMs` (it keeps the last 24 hours). */
function listedOn(source: XetraSource, date: string, nowMs: number): string[] {
  const toMs = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS;
  return xetraFilesBetween(source, toMs - DAY_MS, toMs, SEED).filter((n) => n.startsWith(`${source}-posttrade-${date}T`));
}

function expectedTrades(name: string): Trade[] {
  return (tradesInFile(name, SEED) ?? []).map((r) => ({
    venue: 'xetra',
    symbol: r.isin,
    tradeId: r.transIdCode,
    timeMs: Date.parse(`${r.lastTradeTime.slice(0, 23)}Z`),
    price: String(r.lastTrade),
    size: String(r.lastQty),
    currency: r.currency,
  }));
}

describe('XetraAdapter against the xetra emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  const date = new Date(Date.now() - 90 * MINUTE_MS).toISOString().slice(0, 10);

  it('lists a date across markets and downloads files into exactly the venue trades, the markets paced as one under the limit', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { xetra: { limit: { requests: 5, windowMs: 500 } } } } });
    // Requests leave paced but arrive with the machine's jitter: with the default 50 ms of slack a late
    // first request shares a venue window with the sixth on a busy machine. 300 ms (a request each 160 ms)
    // absorbs any plausible delay while still pacing each market under the limit.
    const adapter = new XetraAdapter({ baseUrl: mock.baseUrl('xetra'), markets: ['DETR', 'DGAT'], paceRequests: 5, paceIntervalMs: 500, paceSlackMs: 300 });
    const t0 = Date.now();
    const files = await adapter.listFiles(date);
    const t1 = Date.now();
    const names = files.map((f) => f.name);
    const detr = names.filter((n) => n.startsWith('DETR'));
    expect([listedOn('DETR', date, t0), listedOn('DETR', date, t1)]).toContainEqual(detr);
    expect(names.filter((n) => n.startsWith('DGAT')).length).toBeGreaterThan(0);
    expect(files.every((f: FileRef) => f.date === date && f.minuteMs !== undefined)).toBe(true);

    const picked = files.slice(0, 9);
    const results = await Promise.all(picked.map((f) => adapter.fetchFile(f)));
    results.forEach((r, i) => {
      expect(r.trades).toEqual(expectedTrades(picked[i]!.name));
      expect(r.envelopes.map((e) => e.messageId)).toEqual(r.trades.map((t) => `xetra:${picked[i]!.market}:${t.tradeId}`));
    });
    const stats = mock.stats().venues.xetra;
    expect(stats.requests).toBe(11);
    expect(stats.responses429).toBe(0);
    // the markets paced as one: each under its own limit, and all of them together under the venue's
    expect(Object.keys(stats.scopes ?? {})).toEqual(['DETR', 'DGAT']);
    for (const market of Object.values(stats.scopes ?? {})) expect(market.maxWindowWeight).toBeLessThanOrEqual(5);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(5);
  });

  it('falls back to exponential backoff when the venue is stricter than the pacing, and still gets every file', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { xetra: { limit: { requests: 2, windowMs: 500 } } } } });
    const adapter = new XetraAdapter({
      baseUrl: mock.baseUrl('xetra'),
      markets: ['DFRA'],
      paceRequests: 20,
      paceIntervalMs: 500,
      backoffBaseMs: 100,
      maxAttempts: 8,
    });
    const files = (await adapter.listFiles(date)).slice(0, 6);
    const results = await Promise.all(files.map((f) => adapter.fetchFile(f)));
    results.forEach((r, i) => expect(r.trades).toEqual(expectedTrades(files[i]!.name)));
    expect(mock.stats().venues.xetra.responses429).toBeGreaterThan(0);
  });

  it('types unknown files and malformed (truncated or wrong-shape) downloads', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { xetra: { limit: { enabled: false } } } } });
    const adapter = new XetraAdapter({ baseUrl: mock.baseUrl('xetra'), markets: ['DETR'], paceIntervalMs: 100 });
    const [file] = await adapter.listFiles(date);
    expect(await caught(() => adapter.fetchFile({ name: 'DETR-posttrade-no-such-file.json.gz', market: 'DETR', date: date }))).toBeInstanceOf(
      UnrecoverableError,
    );
    mock.patchScenario({ venues: { xetra: { malformedRate: 1 } } });
    for (let i = 0; i < 4; i++) expect(await caught(() => adapter.fetchFile(file!))).toBeInstanceOf(MalformedPayloadError);
    expect(mock.stats().venues.xetra.malformedResponses).toBe(4);
  });
});
