import { gzipSync } from 'node:zlib';
import { MalformedPayloadError, RateLimitedError, UnrecoverableError, ValidationError } from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import type { BeforeRequestInfo } from '../types.js';
import { XetraAdapter } from './xetra-adapter.js';
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
    const { trades, envelopes } = await adapter.fetchFile({ name: 'DETR-posttrade-2025-10-31T13_54.json.gz', market: 'DETR', date: '2025-10-31' });
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

  it('backs off on 429 and retries through the budget hook, then gives up with RateLimitedError', async () => {
    let answered = 0;
    route = () => (++answered <= 2 ? { status: 429, body: '{"message":"Too Many Requests"}' } : { body: fixture('xetra/list.json') });
    const before: BeforeRequestInfo[] = [];
    const adapter = new XetraAdapter({ baseUrl: server.url, markets: ['DETR'], backoffBaseMs: 20, hooks: { beforeRequest: async (i) => void before.push(i) } });
    const files = await adapter.listFiles('2025-10-31');
    expect(files).toHaveLength(2);
    expect(before).toEqual([1, 2, 3].map(() => ({ venue: 'xetra', endpoint: 'list', weight: 1 })));

    route = () => ({ status: 429, body: '' });
    const stubborn = new XetraAdapter({ baseUrl: server.url, markets: ['DETR'], backoffBaseMs: 10, maxAttempts: 3 });
    const n = server.requests.length;
    const err = await caught(() => stubborn.listFiles('2025-10-31'));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(server.requests.length - n).toBe(3);
  });

  it('paces requests proactively: no more than paceRequests in any paceIntervalMs', async () => {
    route = () => ({ body: fixture('xetra/list.json') });
    const sentAt: number[] = [];
    const adapter = new XetraAdapter({
      baseUrl: server.url,
      markets: ['DETR', 'DFRA', 'DGAT', 'DEUR'],
      paceRequests: 2,
      paceIntervalMs: 300,
      hooks: { beforeRequest: async () => void sentAt.push(performance.now()) },
    });
    await Promise.all([adapter.listFiles('2025-10-31'), adapter.listFiles('2025-10-30')]);
    expect(sentAt).toHaveLength(8);
    sentAt.sort((a, b) => a - b);
    // any 3 consecutive starts span at least one pacing interval (small slack for timer granularity)
    for (let i = 2; i < sentAt.length; i++) expect(sentAt[i]! - sentAt[i - 2]!).toBeGreaterThanOrEqual(290);
  });
});
