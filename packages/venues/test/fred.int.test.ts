import { ApiKeyRejectedError, MalformedPayloadError, RateLimitedError, UnknownSeriesError } from '@tickfleet/core';
import { FRED_UNREGISTERED_KEY_PREFIX, fredObservationDates, isBondMarketHoliday, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { FredAdapter, TREASURY_CURVE_SERIES, type BeforeRequestInfo } from '../src/index.js';
import { caught, collect } from './async-helpers.js';

const DAY_MS = 86_400_000;
const KEY = 'abcdefghijklmnopqrstuvwxyz012345';

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

describe('FredAdapter against the fred emulation over HTTP', () => {
  let mock: MockVenue;
  afterEach(async () => {
    await mock?.stop();
  });

  it('pages by offset through every tenor of the curve: each date once, holidays null, one request per page', async () => {
    mock = await startMockVenue({ scenario: { venues: { fred: { limit: { requests: 1000 } } } } });
    const before: BeforeRequestInfo[] = [];
    const adapter = new FredAdapter({ baseUrl: mock.baseUrl('fred'), apiKey: KEY, pageSize: 40, hooks: { beforeRequest: async (i) => void before.push(i) } });
    // Around Christmas and New Year: closes on 2024-12-25, 2025-01-01 and Martin Luther King Jr. Day, 2025-01-20.
    const fromMs = Date.UTC(2024, 11, 1);
    const toMs = Date.UTC(2025, 0, 31);
    const dates = fredObservationDates('DGS10', fromMs, toMs).map(isoDay);
    let pages = 0;
    for (const id of TREASURY_CURVE_SERIES) {
      const got = await collect(adapter.fetchSeries(id, isoDay(fromMs), isoDay(toMs)));
      pages += got.length;
      const rows = got.flatMap((p) => p.observations);
      expect(rows.map((o) => o.date)).toEqual(dates);
      expect(rows.filter((o) => o.value === null).map((o) => o.date)).toEqual(['2024-12-25', '2025-01-01', '2025-01-20']);
      expect(rows.every((o) => o.value === null || (o.value > 0 && o.realtimeEnd === '9999-12-31'))).toBe(true);
      // Published the day after the observation: a stable real-time start.
      expect(rows.every((o) => o.realtimeStart === isoDay(Date.parse(`${o.date}T00:00:00Z`) + DAY_MS))).toBe(true);
    }
    expect(pages).toBe(TREASURY_CURVE_SERIES.length * Math.ceil(dates.length / 40));
    expect(dates.filter((d) => isBondMarketHoliday(Date.parse(`${d}T00:00:00Z`)))).toHaveLength(3);
    expect(mock.stats().venues.fred.requests).toBe(pages);
    expect(before).toHaveLength(pages);
    expect(before[0]).toMatchObject({ venue: 'fred', endpoint: 'observations', weight: 1 });
  });

  it("maps the emulation's refusals: 429 past the limit, an unregistered key, an unknown series, a malformed body", async () => {
    // The emulation's clock stands still, so both requests fall in one of its minute windows.
    mock = await startMockVenue({ clock: new ManualClock(Date.now()), scenario: { venues: { fred: { limit: { requests: 1, windowMs: 60_000 } } } } });
    const adapter = new FredAdapter({ baseUrl: mock.baseUrl('fred'), apiKey: KEY });
    expect(await collect(adapter.fetchSeries('UNRATE', '2024-01-01', '2024-03-01'))).toHaveLength(1);
    const limited = await caught(() => collect(adapter.fetchSeries('UNRATE', '2024-01-01', '2024-03-01')));
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect((limited as RateLimitedError).fromVenue).toBe(false);
    mock.patchScenario({ venues: { fred: { limit: { enabled: false } } } });
    const unregistered = new FredAdapter({ baseUrl: mock.baseUrl('fred'), apiKey: FRED_UNREGISTERED_KEY_PREFIX.padEnd(32, '0') });
    expect(await caught(() => collect(unregistered.fetchSeries('DGS10', '2024-01-01', '2024-01-31')))).toBeInstanceOf(ApiKeyRejectedError);
    expect(await caught(() => collect(adapter.fetchSeries('NOSUCH', '2024-01-01', '2024-01-31')))).toBeInstanceOf(UnknownSeriesError);
    mock.patchScenario({ venues: { fred: { malformedRate: 1 } } });
    expect(await caught(() => collect(adapter.fetchSeries('DFF', '2024-01-01', '2024-01-31')))).toBeInstanceOf(MalformedPayloadError);
  });
});
