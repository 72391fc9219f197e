import { gzipSync } from 'node:zlib';
import { MalformedPayloadError, RateLimitedError, UnrecoverableError, ValidationError } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { BeforeRequestInfo } from '../types.js';
import { XETRA_DEFAULTS, XetraAdapter, xetraBackoffMs } from './xetra-adapter.js';
import { caught } from '../../test/async-helpers.js';

describe('XetraAdapter against documented samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('lists one date of a market from CurrentFiles', async () => {
    route = (req) => (req.path === '/DETR-posttrade' ? { body: fixture('xetra/list.json') } : undefined);
    const adapter = new XetraAdapter({ baseUrl: server.url, markets: ['DETR'] });
    const files = await adapter.listFiles('2025-10-31');
    expect(files).toEqual([
      { name: 'DETR-posttrade-2025-10-31T13_54.json.gz', market: 'DETR', date: '2025-10-31', minuteMs: Date.UTC(2025, 9, 31, 13, 54) },
      { name: 'DETR-posttrade-2025-10-31T13_55.json.gz', market: 'DETR', date: '2025-10-31', minuteMs: Date.UTC(2025, 9, 31, 13, 55) },
    ]);
    await expect(adapter.listFiles('31.10.2025')).rejects.toBeInstanceOf(ValidationError);
  });

  it('downloads and parses a gzip NDJSON file into trades keeping the documented field names', async () => {
    route = (req) =>
      req.path === '/download/DETR-posttrade-2025-10-31T13_54.json.gz'
        ? { body: gzipSync(fixture('xetra/posttrade.ndjson')), headers: { 'content-type': 'application/octet-stream' } }
        : undefined;
    const adapter = new XetraAdapter({ baseUrl: server.url });
    const { trades, envelopes, bytes } = await adapter.fetchFile({ name: 'DETR-posttrade-2025-10-31T13_54.json.gz', market: 'DETR', date: '2025-10-31' });
    // The download's size as it came (gzip), for a long unit's progress.
    expect(bytes).toBe(gzipSync(fixture('xetra/posttrade.ndjson')).length);
    expect(trades).toEqual([
      {
        venue: 'xetra',
        symbol: 'DE0007100000',
        tradeId: '1000000000000025050760176191884004245705800000006636',
        timeMs: Date.UTC(2025, 9, 31, 13, 54, 0, 42),
        price: '56.2',
        size: '159',
        currency: 'EUR',
      },
      expect.objectContaining({ symbol: 'DE0005557508', price: '27.935', size: '1200', timeMs: Date.UTC(2025, 9, 31, 13, 54, 7, 998) }),
    ]);
    expect(envelopes[0]).toMatchObject({
      channel: 'trades',
      messageId: 'xetra:DETR:1000000000000025050760176191884004245705800000006636',
      serverTimeMs: trades[0]!.timeMs,
    });
    expect((envelopes[0]!.payload.source as Record<string, unknown>).lastTradeTime).toBe('2025-10-31T13:54:00.042457058Z');
    expect((envelopes[0]!.payload.source as Record<string, unknown>).mmtAlgoInd).toBe('H');
  });

  it('parses a big file in chunks without losing records', async () => {
    const line = JSON.parse(fixture('xetra/posttrade.ndjson').split('\n')[0]!) as Record<string, unknown>;
    const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ ...line, transIdCode: `T${i}`, tickId: i }));
    route = () => ({ body: gzipSync(lines.join('\n')) });
    const adapter = new XetraAdapter({ baseUrl: server.url, parseChunkLines: 700 });
    const { trades } = await adapter.fetchFile({ name: 'big.json.gz', market: 'DETR', date: '2025-10-31' });
    expect(trades.map((t) => t.tradeId)).toEqual(lines.map((_, i) => `T${i}`));
  });

  it('yields typed errors for a non-gzip body, a bad record and an unknown file', async () => {
    const adapter = new XetraAdapter({ baseUrl: server.url });
    const ref = { name: 'x.json.gz', market: 'DETR', date: '2025-10-31' };
    route = () => ({ body: 'plain text' });
    expect(await caught(() => adapter.fetchFile(ref))).toBeInstanceOf(MalformedPayloadError);
    route = () => ({
      body: gzipSync('{"isin":"DE0007100000","lastTrade":1,"lastQty":1,"lastTradeTime":"2025-10-31T13:54:00Z","transIdCode":"a"}\n{"isin":"nope"}\n'),
    });
    const err = await caught(() => adapter.fetchFile(ref));
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect((err as Error).message).toContain('line 2');
    route = () => ({ status: 404, body: '{"message":"Not Found"}' });
    expect(await caught(() => adapter.fetchFile(ref))).toBeInstanceOf(UnrecoverableError);
  });

  it("has the design's defaults: 5 requests per 2 s across the markets, evenly 400 ms apart, 429 retries after 2 s, 4 s, 8 s", () => {
    expect(XETRA_DEFAULTS).toMatchObject({ requests: 5, periodMs: 2000, pacing: 'even', spacingMs: 400, maxAttempts: 4, backoffBaseMs: 2000 });
    expect(XETRA_DEFAULTS.periodMs / XETRA_DEFAULTS.requests).toBe(XETRA_DEFAULTS.spacingMs);
    expect(xetraBackoffMs()).toEqual([2000, 4000, 8000]);
    expect(xetraBackoffMs({ maxAttempts: 6, backoffBaseMs: 2000, backoffMaxMs: 10_000 })).toEqual([2000, 4000, 8000, 10_000, 10_000]);
    expect(() => new XetraAdapter({ baseUrl: server.url, pacing: 'jittery' as 'even' })).toThrow(/invalid pacing/);
  });

  it('backs off on 429 by the computed sequence through the budget hook (which sees the market), then hands over a RateLimitedError', async () => {
    let answered = 0;
    route = () => (++answered <= 2 ? { status: 429, body: '{"message":"Too Many Requests"}' } : { body: fixture('xetra/list.json') });
    const before: BeforeRequestInfo[] = [];
    const waits: number[] = [];
    const adapter = new XetraAdapter({
      baseUrl: server.url,
      markets: ['DETR'],
      backoffBaseMs: 20,
      pacing: 'off',
      hooks: { beforeRequest: async (i) => void before.push(i) },
      onBackoff: ({ waitMs }) => void waits.push(waitMs),
    });
    const files = await adapter.listFiles('2025-10-31');
    expect(files).toHaveLength(2);
    expect(before).toEqual([1, 2, 3].map(() => ({ venue: 'xetra', endpoint: 'list', weight: 1, scope: 'DETR' })));
    expect(waits).toEqual([20, 40]);

    // Always 429: the first request and three retries after base, 2x base and 4x base (the design's
    // 2 s, 4 s, 8 s at the defaults), then the error the worker answers with a venue freeze. The
    // venue gave no Retry-After, so the freeze is the connector's.
    route = () => ({ status: 429, body: '' });
    waits.length = 0;
    const stubborn = new XetraAdapter({
      baseUrl: server.url,
      markets: ['DETR'],
      backoffBaseMs: 10,
      pacing: 'off',
      onBackoff: ({ waitMs }) => void waits.push(waitMs),
    });
    const n = server.requests.length;
    const err = await caught(() => stubborn.listFiles('2025-10-31'));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).fromVenue).toBe(false);
    expect(server.requests.length - n).toBe(4);
    expect(waits).toEqual(xetraBackoffMs({ backoffBaseMs: 10 }));
    expect(waits).toEqual([10, 20, 40]);
  });

  it('paces all markets as one: even spaces any two requests window/requests apart, burst allows requests per window', async () => {
    const PREEMPTION_MS = 50;
    route = () => ({ body: fixture('xetra/list.json') });
    const starts = (pacing: 'even' | 'burst') => {
      const byMarket = new Map<string, number[]>();
      const all: number[] = [];
      const adapter = new XetraAdapter({
        baseUrl: server.url,
        markets: ['DETR', 'DFRA'],
        pacing,
        paceRequests: 2,
        paceIntervalMs: 300,
        paceSlackMs: 0,
        // Read on the pacer's own clock (p-queue spaces starts by Date.now()); the hook runs in the same
        // turn as the start it follows, but the OS may preempt the process in between, which shortens a
        // measured span by as long: a busy machine measured 294 ms for a 300 ms window. An unpaced
        // adapter starts them all within a millisecond, so a 50 ms tolerance still tells the two apart.
        hooks: {
          beforeRequest: async (i) => {
            byMarket.set(i.scope!, [...(byMarket.get(i.scope!) ?? []), Date.now()]);
            all.push(Date.now());
          },
        },
      });
      return { adapter, byMarket, all };
    };
    const even = starts('even');
    await Promise.all([0, 1, 2].map((d) => even.adapter.listFiles(`2025-10-2${d}`)));
    for (const m of ['DETR', 'DFRA']) expect(even.byMarket.get(m)).toHaveLength(3);
    // starts of any market 150 ms apart (less the preemption tolerance): the markets share one pacer
    for (let i = 1; i < even.all.length; i++) expect(even.all[i]! - even.all[i - 1]!).toBeGreaterThanOrEqual(150 - PREEMPTION_MS);
    const burst = starts('burst');
    await Promise.all([0, 1, 2, 3].map((d) => burst.adapter.listFiles(`2025-10-2${d}`)));
    for (const m of ['DETR', 'DFRA']) expect(burst.byMarket.get(m)).toHaveLength(4);
    // any 3 consecutive starts, whichever markets, span the window (less the preemption tolerance)
    for (let i = 2; i < burst.all.length; i++) expect(burst.all[i]! - burst.all[i - 2]!).toBeGreaterThanOrEqual(300 - PREEMPTION_MS);
  });
});
