import { BannedError, MalformedPayloadError, RateLimitedError, TransientError, UnrecoverableError, type Candle } from '@tickfleet/core';
import { binanceBookAtUpdateId, expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { BinanceAdapter, createVenueAdapter, type AfterResponseInfo } from '../src/index.js';
import { caught, collect } from './async-helpers.js';

const DAY_MS = 86_400_000;
const SEED = 7;

describe('BinanceAdapter against the binance emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  it('backfills 3 days of 1m over 5 pages: every candle exactly once, equal to expectedCandles', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED } });
    const after: AfterResponseInfo[] = [];
    const adapter = createVenueAdapter('binance', { baseUrl: mock.baseUrl('binance'), hooks: { afterResponse: (i) => void after.push(i) } });
    const toMs = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS;
    const fromMs = toMs - 3 * DAY_MS;
    const pages = await collect(adapter.fetchCandles('BTC/USDT', '1m', fromMs, toMs));
    expect(pages.map((p) => p.candles.length)).toEqual([1000, 1000, 1000, 1000, 320]);
    const got = pages.flatMap((p) => p.candles);
    expect(new Set(got.map((c) => c.openTime)).size).toBe(4320);
    expect(got).toEqual(expectedCandles('binance', 'BTC/USDT', '1m', fromMs, toMs, SEED));
    expect(pages.flatMap((p) => p.envelopes).map((e) => e.messageId)).toEqual(got.map((c) => `binance:BTC/USDT:1m:${c.openTime}`));
    // Every response reported the IP's used weight: 2 per klines request, counted in the clock minute.
    expect(after.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(after.every((a) => a.usedWeight !== undefined && a.usedWeight % 2 === 0 && a.usedWeightWindowStartMs! % 60_000 === 0)).toBe(true);
    expect(mock.stats().venues.binance.weightUsed).toBe(10);
  });

  it('skips venue holes and still returns every existing candle once, up to the last closed one', async () => {
    const nowMs = Date.now();
    const fromMs = Math.floor(nowMs / 60_000) * 60_000 - 1800 * 60_000;
    const holes = { rate: 0.05, ranges: [{ symbol: 'ETH/USDT', fromMs: fromMs + 100 * 60_000, toMs: fromMs + 160 * 60_000 }] };
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { binance: { holes } } } });
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance'), maxCandlesPerPage: 500 });
    const toMs = nowMs + 3_600_000; // runs into the future: only closed candles come back
    const got = (await collect(adapter.fetchCandles('ETH/USDT', '1m', fromMs, toMs))).flatMap((p) => p.candles);
    const want: Candle[] = expectedCandles('binance', 'ETH/USDT', '1m', fromMs, toMs, SEED, { holes, nowMs: Date.now() });
    // The last candle may close between the fetch and computing `want`.
    expect(got).toEqual(want.slice(0, got.length));
    expect(want.length - got.length).toBeLessThanOrEqual(1);
    expect(got.length).toBeLessThan(1800 - 60);
    expect(got.some((c) => c.openTime >= fromMs + 100 * 60_000 && c.openTime < fromMs + 160 * 60_000)).toBe(false);
    expect(got.every((c) => c.openTime + 60_000 <= Date.now())).toBe(true);
  });

  it('maps a 429 to RateLimitedError whose retryAtMs is the end of the venue window', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { binance: { limit: { weight: 6, windowMs: 2000, banAfter: 100 } } } } });
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance'), usedWeightWindowMs: 2000 });
    let err: unknown;
    let sentMs = 0;
    for (let i = 0; i < 10 && !err; i++) {
      sentMs = Date.now();
      err = await adapter.fetchBook('BTC/USDT').then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    expect(err).toBeInstanceOf(RateLimitedError);
    const retryAtMs = (err as RateLimitedError).retryAtMs;
    expect(retryAtMs % 2000).toBe(0);
    expect(retryAtMs).toBeGreaterThan(sentMs);
    expect(retryAtMs).toBeLessThanOrEqual(Date.now() + 2000);
    expect(mock.stats().venues.binance.responses429).toBe(1);
  });

  it('maps a 418 to BannedError carrying the ban end the body names', async () => {
    // The emulation's clock stands still: all five requests fall in one of its minute windows (on the
    // real clock a minute boundary between them would open a fresh window and change every answer).
    const clock = new ManualClock(Date.now());
    mock = await startMockVenue({ clock, scenario: { seed: SEED, venues: { binance: { limit: { weight: 5, windowMs: 60_000, banAfter: 1, banMs: 5000 } } } } });
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance') });
    const errors: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      errors.push(
        await adapter.fetchBook('BTC/USDT').then(
          () => 'ok',
          (e: unknown) => e,
        ),
      );
    }
    expect(errors[0]).toBe('ok');
    // 1st: 200 (weight 5 = limit); 2nd: 429; 3rd: over again (tolerated, banAfter 1); 4th: banned.
    expect(errors.slice(1, 3).every((e) => e instanceof RateLimitedError)).toBe(true);
    const ban = errors[3];
    expect(ban).toBeInstanceOf(BannedError);
    const bannedUntilMs = mock.stats().venues.binance.bannedUntilMs;
    expect(bannedUntilMs).not.toBeNull();
    expect((ban as BannedError).bannedUntilMs).toBe(bannedUntilMs);
    expect((errors[4] as BannedError).bannedUntilMs).toBe(bannedUntilMs);
  });

  it('turns malformed responses into MalformedPayloadError, never a crash', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { binance: { malformedRate: 1 } } } });
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance') });
    const toMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    for (let i = 0; i < 6; i++) {
      const err = await caught(() =>
        i % 3 === 0
          ? collect(adapter.fetchCandles('BTC/USDT', '1m', toMs - DAY_MS, toMs))
          : i % 3 === 1
            ? adapter.fetchBook('BTC/USDT')
            : adapter.listInstruments(),
      );
      expect(err).toBeInstanceOf(MalformedPayloadError);
      expect((err as MalformedPayloadError).sample.length).toBeGreaterThan(0);
    }
    expect(mock.stats().venues.binance.malformedResponses).toBe(6);
  });

  it('turns outages, injected 5xx and bad symbols into transient and unrecoverable errors', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { binance: { errorRate: 1 } } } });
    // a timeout far beyond the answers: each one is the emulation's fault, never a slow machine's
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance'), timeoutMs: 30_000 });
    const e5xx = await caught(() => adapter.fetchBook('BTC/USDT'));
    expect(e5xx).toBeInstanceOf(TransientError);
    expect((e5xx as TransientError).status).toBeGreaterThanOrEqual(500);

    mock.patchScenario({ venues: { binance: { errorRate: 0, outageForMs: 10_000 } } });
    const eOutage = await caught(() => adapter.fetchBook('BTC/USDT'));
    expect(eOutage).toBeInstanceOf(TransientError);
    expect((eOutage as TransientError).status).toBeUndefined();

    mock.patchScenario({ venues: { binance: { outages: [] } } });
    const eSymbol = await caught(() => adapter.fetchBook('NOPE/USDT'));
    expect(eSymbol).toBeInstanceOf(UnrecoverableError);
  });

  it('discovers symbols from exchangeInfo and fetches depth snapshots', async () => {
    mock = await startMockVenue({ scenario: { seed: SEED, venues: { binance: { symbols: ['BTC/USDT', 'ETH/BTC', 'SOL/FDUSD'] } } } });
    const adapter = new BinanceAdapter({ baseUrl: mock.baseUrl('binance'), depthLimit: 20 });
    expect((await adapter.listInstruments()).map((i) => i.symbol)).toEqual(['BTC/USDT', 'ETH/BTC', 'SOL/FDUSD']);
    const { book, envelope } = await adapter.fetchBook('SOL/FDUSD');
    expect(book.bids).toHaveLength(20);
    expect(book.asks).toHaveLength(20);
    expect(Number(book.bids[0]![0])).toBeLessThan(Number(book.asks[0]![0]));
    expect(envelope.sequence).toBe(book.sequence);
    // lastUpdateId names the emulated book's 100 ms tick: the snapshot is exactly the venue's book then.
    const want = binanceBookAtUpdateId('SOL/FDUSD', book.sequence!, SEED, 20);
    expect([book.bids, book.asks]).toEqual([want.bids, want.asks]);
    expect(mock.stats().venues.binance.weightUsed).toBe(20 + 5);
  });
});
