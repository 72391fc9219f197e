import { ManualClock } from '@tickfleet/testkit';
import {
  ApiKeyRejectedError,
  ConfigError,
  MalformedPayloadError,
  RateLimitedError,
  TransientError,
  UnknownSeriesError,
  UnrecoverableError,
  ValidationError,
} from '@tickfleet/core';
import { fixture, FixtureServer, type FixtureRoute } from '../../test/fixture-server.js';
import { caught, collect } from '../../test/async-helpers.js';
import { VenueRejectedError } from '../venue-rejected-error.js';
import { FredAdapter, TREASURY_CURVE_SERIES } from './fred-adapter.js';

const KEY = 'abcdefghijklmnopqrstuvwxyz012345';

describe('FredAdapter against documented response samples', () => {
  let server: FixtureServer;
  let route: FixtureRoute;
  beforeAll(async () => {
    server = await FixtureServer.start((req, s) => route(req, s));
  });
  afterAll(() => server.close());

  it('asks for every vintage since the first date and converts the documented example, paging by offset', async () => {
    route = (req) => {
      if (req.query.get('offset') === '0') return { body: fixture('fred/observations-docs-example.json') };
      // The documented example says count 84 but lists three: the rest is the next page.
      const rest = JSON.parse(fixture('fred/observations-docs-example.json')) as Record<string, unknown>;
      return {
        body: JSON.stringify({
          ...rest,
          offset: Number(req.query.get('offset')),
          count: 4,
          observations: [{ realtime_start: '2013-08-14', realtime_end: '2013-08-14', date: '1932-01-01', value: '.' }],
        }),
      };
    };
    const before = server.requests.length;
    const adapter = new FredAdapter({ baseUrl: server.url, apiKey: KEY });
    const pages = await collect(adapter.fetchSeries('GNPCA', '1929-01-01', '1932-12-31'));
    expect(pages).toHaveLength(2);
    expect(pages[0]!.observations[0]).toEqual({
      venue: 'fred',
      symbol: 'GNPCA',
      date: '1929-01-01',
      value: 1065.9,
      realtimeStart: '2013-08-14',
      realtimeEnd: '2013-08-14',
      units: 'lin',
    });
    expect(pages[0]!.envelopes[0]).toMatchObject({ channel: 'series', symbol: 'GNPCA', messageId: 'fred:GNPCA:1929-01-01:2013-08-14' });
    expect(pages[1]!.observations).toEqual([expect.objectContaining({ date: '1932-01-01', value: null })]);
    const reqs = server.requests.slice(before);
    expect(reqs.map((r) => r.path)).toEqual(['/fred/series/observations', '/fred/series/observations']);
    expect(Object.fromEntries(reqs[0]!.query)).toEqual({
      series_id: 'GNPCA',
      observation_start: '1929-01-01',
      observation_end: '1932-12-31',
      realtime_start: '1929-01-01',
      realtime_end: '9999-12-31',
      sort_order: 'asc',
      limit: '100000',
      offset: '0',
      file_type: 'json',
      api_key: KEY,
    });
    expect(reqs[1]!.query.get('offset')).toBe('3');
  });

  it('keeps "." as null, never 0, and keys each vintage by its own real-time start', async () => {
    route = () => ({ body: fixture('fred/observations-dgs10-holiday.json') });
    const [page] = await collect(new FredAdapter({ baseUrl: server.url, apiKey: KEY }).fetchSeries('DGS10', '2024-07-01', '2024-07-05'));
    expect(page!.observations.map((o) => [o.date, o.value])).toEqual([
      ['2024-07-01', 4.48],
      ['2024-07-02', 4.43],
      ['2024-07-03', 4.36],
      ['2024-07-04', null],
      ['2024-07-05', 4.28],
    ]);
    expect(page!.envelopes[3]).toMatchObject({ messageId: 'fred:DGS10:2024-07-04:2024-07-05', payload: { value: null, realtimeEnd: '9999-12-31' } });
  });

  it('maps the documented error bodies to typed errors that never carry the key', async () => {
    const adapter = new FredAdapter({ baseUrl: server.url, apiKey: KEY, clock: new ManualClock(Date.UTC(2024, 0, 1, 12)), rateLimitWindowMs: 10_000 });
    const errorOf = async (status: number, file: string): Promise<unknown> => {
      route = () => ({ status, body: fixture(`fred/${file}`) });
      return caught(() => collect(adapter.fetchSeries('DGS10', '2024-01-01', '2024-01-31')));
    };
    const key = await errorOf(400, 'error-400-api-key.json');
    expect(key).toBeInstanceOf(ApiKeyRejectedError);
    expect((key as ApiKeyRejectedError).venueMessage).toMatch(/^Bad Request\. {2}The value for variable api_key is not registered\./);
    const unknown = await errorOf(400, 'error-400-series.json');
    expect(unknown).toBeInstanceOf(UnknownSeriesError);
    expect((unknown as UnknownSeriesError).seriesId).toBe('DGS10');
    const variable = await errorOf(400, 'error-400-variable.json');
    expect(variable).toBeInstanceOf(VenueRejectedError);
    expect((variable as VenueRejectedError).venueMessage).toContain('Variable sort_order');
    const limited = await errorOf(429, 'error-429.json');
    expect(limited).toBeInstanceOf(RateLimitedError);
    // No Retry-After: one window later, and the fleet's connector freeze decides.
    expect((limited as RateLimitedError).retryAtMs).toBe(Date.UTC(2024, 0, 1, 12) + 10_000);
    expect((limited as RateLimitedError).fromVenue).toBe(false);
    expect((limited as Error).message).toContain('Exceeded Rate Limit');
    expect(await errorOf(500, 'error-500.json')).toBeInstanceOf(TransientError);
    expect(await errorOf(423, 'error-500.json')).toBeInstanceOf(TransientError);
    for (const err of [key, unknown, variable, limited]) {
      expect(err).toBeInstanceOf(Error);
      expect(JSON.stringify({ message: (err as Error).message, ...(err as object) })).not.toContain(KEY);
    }
    expect(key).toBeInstanceOf(UnrecoverableError);
  });

  it('refuses to run without a key, and names a bad series id or date', async () => {
    expect(await caught(() => collect(new FredAdapter({ baseUrl: server.url }).fetchSeries('DGS10', '2024-01-01', '2024-01-02')))).toBeInstanceOf(ConfigError);
    const adapter = new FredAdapter({ baseUrl: server.url, apiKey: KEY });
    expect(await caught(() => collect(adapter.fetchSeries('dgs10', '2024-01-01', '2024-01-02')))).toBeInstanceOf(ValidationError);
    expect(await caught(() => collect(adapter.fetchSeries('DGS10', '2024-1-1', '2024-01-02')))).toBeInstanceOf(ValidationError);
    expect(adapter.seriesOf('treasury-curve')).toEqual(TREASURY_CURVE_SERIES);
    expect(adapter.seriesOf('CPIAUCSL')).toEqual(['CPIAUCSL']);
    expect(() => adapter.seriesOf('BTC/USDT')).toThrow(ValidationError);
  });

  it('yields MalformedPayloadError for a wrong shape or a value that is not a number', async () => {
    const adapter = new FredAdapter({ baseUrl: server.url, apiKey: KEY });
    route = () => ({ body: '{"observations":[]}' });
    expect(await caught(() => collect(adapter.fetchSeries('DGS10', '2024-01-01', '2024-01-31')))).toBeInstanceOf(MalformedPayloadError);
    route = () => ({ body: fixture('fred/observations-dgs10-holiday.json').replace('"4.48"', '"n/a"') });
    expect(await caught(() => collect(adapter.fetchSeries('DGS10', '2024-07-01', '2024-07-05')))).toBeInstanceOf(MalformedPayloadError);
  });
});
