import { freePort, ManualClock } from '@tickfleet/testkit';
import { BudgetExhaustedError, TransientError, type RateLimitedError } from '@tickfleet/core';
import { FixtureServer, type FixtureResponse } from '../test/fixture-server.js';
import type { AfterResponseInfo } from './types.js';
import { VenueHttpClient } from './venue-http-client.js';
import { caught } from '../test/async-helpers.js';

describe('VenueHttpClient', () => {
  let server: FixtureServer;
  beforeAll(async () => {
    server = await FixtureServer.start((req): FixtureResponse | undefined => {
      if (req.path === '/slow') return { body: '{}', delayMs: 1500 };
      if (req.path === '/ok') return { body: '{"ok":true}', headers: { 'x-used': '7' } };
      if (req.path === '/429-date') return { status: 429, headers: { 'retry-after': new Date(Date.UTC(2024, 0, 1, 0, 0, 42)).toUTCString() }, body: '' };
      if (req.path === '/429-bare') return { status: 429, body: '{"error":"Too Many Requests"}' };
      if (req.path === '/moved') return { status: 301, headers: { location: '/ok' }, body: '' };
      if (req.path === '/elsewhere') return { status: 302, headers: { location: `${other.url}/ok` }, body: '' };
      if (req.path === '/loop') return { status: 302, headers: { location: '/loop' }, body: '' };
      return undefined;
    });
    other = await FixtureServer.start((req) => (req.path === '/ok' ? { body: '{"other":true}' } : undefined));
  });
  afterAll(async () => {
    await server.close();
    await other.close();
  });
  let other: FixtureServer;

  const policy = { rateLimitFallbackMs: 60_000 };

  it('turns a timeout into TransientError and still reports the attempt (status 0)', async () => {
    const after: AfterResponseInfo[] = [];
    const http = new VenueHttpClient({ venue: 'test', timeoutMs: 200, errorPolicy: policy, hooks: { afterResponse: (i) => void after.push(i) } });
    const err = await caught(() => http.get({ endpoint: 'slow', weight: 1, url: `${server.url}/slow` }));
    expect(err).toBeInstanceOf(TransientError);
    expect((err as Error).message).toMatch(/timed out after 200 ms/);
    // Named as AbortSignal.timeout names its reason, which is how failure causes count timeouts.
    expect((err as TransientError).cause).toMatchObject({ name: 'TimeoutError' });
    expect(after).toEqual([expect.objectContaining({ venue: 'test', endpoint: 'slow', status: 0 })]);
  });

  it('turns a refused connection into TransientError', async () => {
    const port = await freePort();
    const http = new VenueHttpClient({ venue: 'test', errorPolicy: policy });
    const err = await caught(() => http.get({ endpoint: 'x', weight: 1, url: `http://127.0.0.1:${port}/x` }));
    expect(err).toBeInstanceOf(TransientError);
    expect((err as Error).message).toContain('ECONNREFUSED');
  });

  it("rethrows the caller's abort reason rather than a venue error", async () => {
    const http = new VenueHttpClient({ venue: 'test', errorPolicy: policy });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('shutting down')), 50);
    const err = await caught(() => http.get({ endpoint: 'slow', weight: 1, url: `${server.url}/slow`, signal: ac.signal }));
    expect((err as Error).message).toBe('shutting down');
  });

  it('lets beforeRequest abort a request before it is sent', async () => {
    const before = server.requests.length;
    const http = new VenueHttpClient({
      venue: 'test',
      errorPolicy: policy,
      hooks: {
        beforeRequest: async ({ venue }) => {
          throw new BudgetExhaustedError(venue, 123);
        },
      },
    });
    await expect(http.get({ endpoint: 'ok', weight: 3, url: `${server.url}/ok` })).rejects.toBeInstanceOf(BudgetExhaustedError);
    expect(server.requests.length).toBe(before);
  });

  it('reads the used-weight header into a clock-aligned window of the configured length', async () => {
    const after: AfterResponseInfo[] = [];
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 7, 500));
    const http = new VenueHttpClient({
      venue: 'test',
      clock,
      usedWeightHeader: 'X-Used',
      usedWeightWindowMs: 5000,
      errorPolicy: policy,
      hooks: { afterResponse: (i) => void after.push(i) },
    });
    const res = await http.get({ endpoint: 'ok', weight: 1, url: `${server.url}/ok` });
    expect(JSON.parse(res.body.toString())).toEqual({ ok: true });
    expect(after[0]).toMatchObject({ status: 200, usedWeight: 7, usedWeightWindowStartMs: Date.UTC(2024, 0, 1, 0, 0, 5) });
  });

  it('reads Retry-After as an HTTP date, and falls back to the policy without one', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
    const http = new VenueHttpClient({ venue: 'test', clock, errorPolicy: policy });
    const err = await caught(() => http.get({ endpoint: 'x', weight: 1, url: `${server.url}/429-date` }));
    expect((err as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1, 0, 0, 42));
    expect((err as RateLimitedError).fromVenue).toBe(true);
    const err2 = await caught(() => http.get({ endpoint: 'x', weight: 1, url: `${server.url}/429-bare` }));
    expect((err2 as RateLimitedError).retryAtMs).toBe(clock.now() + 60_000);
    // Only a guess: the worker freezes for the connector's freezeMs instead.
    expect((err2 as RateLimitedError).fromVenue).toBe(false);
    expect((err2 as Error).message).toContain('Too Many Requests');
  });

  it('follows redirects, sending credentials only to the origin they were given for', async () => {
    const after: AfterResponseInfo[] = [];
    const http = new VenueHttpClient({ venue: 'test', errorPolicy: policy, hooks: { afterResponse: (i) => void after.push(i) } });
    const headers = { 'X-Api-Key': 'secret-key' };
    const same = await http.get({ endpoint: 'x', weight: 1, url: `${server.url}/moved`, headers });
    expect(JSON.parse(same.body.toString())).toEqual({ ok: true });
    expect(server.requests.at(-1)).toMatchObject({ path: '/ok', headers: expect.objectContaining({ 'x-api-key': 'secret-key' }) });
    const moved = await http.get({ endpoint: 'x', weight: 1, url: `${server.url}/elsewhere`, headers });
    expect(JSON.parse(moved.body.toString())).toEqual({ other: true });
    expect(other.requests.at(-1)?.headers['x-api-key']).toBeUndefined();
    // One request as far as the hooks (and so the budget) know, however many hops it took.
    expect(after.map((a) => a.status)).toEqual([200, 200]);
    // A redirect loop ends as the venue's last answer, a 302 the caller is told about.
    const err = await caught(() => http.get({ endpoint: 'x', weight: 1, url: `${server.url}/loop` }));
    expect((err as Error).message).toContain('302');
  });
});
