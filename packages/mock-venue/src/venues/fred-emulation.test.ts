import { ManualClock } from '@tickfleet/testkit';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { isBondMarketHoliday } from './fred-calendar.js';

const NOW = Date.UTC(2024, 6, 20, 12);
const KEY = 'abcdefghijklmnopqrstuvwxyz012345';

// parsed venue JSON is probed field by field in assertions
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(url: string): Promise<{ status: number; headers: Headers; body: any }> {
  const r = await fetch(url);
  return { status: r.status, headers: r.headers, body: JSON.parse(await r.text()) };
}

describe('fred emulation', () => {
  let mv: MockVenue;
  let base: string;
  const obs = (query: string): string => `${base}/fred/series/observations?file_type=json&api_key=${KEY}&${query}`;

  beforeEach(async () => {
    mv = await startMockVenue({ clock: new ManualClock(NOW) });
    base = mv.baseUrl('fred');
  });
  afterEach(() => mv.stop());

  test('the documented body; business days only, "." on the Independence Day close; FRED default real-time period is today', async () => {
    const r = await get(obs('series_id=DGS10&observation_start=2024-07-01&observation_end=2024-07-07'));
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual([
      'realtime_start',
      'realtime_end',
      'observation_start',
      'observation_end',
      'units',
      'output_type',
      'file_type',
      'order_by',
      'sort_order',
      'count',
      'offset',
      'limit',
      'observations',
    ]);
    expect(r.body).toMatchObject({
      realtime_start: '2024-07-20',
      realtime_end: '2024-07-20',
      units: 'lin',
      output_type: 1,
      file_type: 'json',
      count: 5,
      limit: 100000,
    });
    const rows = r.body.observations as Array<Record<string, string>>;
    expect(rows.map((o) => o.date)).toEqual(['2024-07-01', '2024-07-02', '2024-07-03', '2024-07-04', '2024-07-05']);
    expect(rows.map((o) => o.value === '.')).toEqual([false, false, false, true, false]);
    for (const o of rows) {
      expect(o).toEqual({ realtime_start: '2024-07-20', realtime_end: '2024-07-20', date: o.date, value: o.value });
      if (o.value !== '.') expect(o.value).toMatch(/^\d+\.\d{2}$/);
    }
  });

  test('vintages: each value with the real-time period it was published in; a revision ends the first; nothing before it was published', async () => {
    const all = await get(obs('series_id=CPIAUCSL&observation_start=2024-04-01&observation_end=2024-07-01&realtime_start=2024-04-01&realtime_end=9999-12-31'));
    const rows = all.body.observations as Array<Record<string, string>>;
    // April and May: first release on the 12th of the next month, revised a month later; June: first release only; July: not yet out.
    expect(rows.map((o) => [o.date, o.realtime_start, o.realtime_end])).toEqual([
      ['2024-04-01', '2024-05-12', '2024-06-11'],
      ['2024-04-01', '2024-06-12', '9999-12-31'],
      ['2024-05-01', '2024-06-12', '2024-07-11'],
      ['2024-05-01', '2024-07-12', '9999-12-31'],
      ['2024-06-01', '2024-07-12', '9999-12-31'],
    ]);
    expect(Number(rows[1]!.value) - Number(rows[0]!.value)).toBeCloseTo(0.1, 6);
    // The same request asked again answers the same rows: keys stay stable across runs.
    expect(
      (await get(obs('series_id=CPIAUCSL&observation_start=2024-04-01&observation_end=2024-07-01&realtime_start=2024-04-01&realtime_end=9999-12-31'))).body,
    ).toEqual(all.body);
    // Paging by offset, newest first.
    const page = await get(obs('series_id=DFF&observation_start=2024-07-01&observation_end=2024-07-10&limit=4&offset=4&sort_order=desc'));
    expect(page.body).toMatchObject({ count: 10, offset: 4, limit: 4, sort_order: 'desc' });
    expect(page.body.observations.map((o: { date: string }) => o.date)).toEqual(['2024-07-06', '2024-07-05', '2024-07-04', '2024-07-03']);
  });

  test('the error bodies FRED documents; key errors and unknown paths are answered before the limit counts', async () => {
    const cases: Array<[string, number, RegExp]> = [
      [`${base}/fred/series/observations?file_type=json&series_id=DGS10`, 400, /^Bad Request\. {2}Variable api_key has not been set\.$/],
      [`${base}/fred/series/observations?file_type=json&series_id=DGS10&api_key=short`, 400, /not a 32 character alpha-numeric lower-case string/],
      [
        `${base}/fred/series/observations?file_type=json&series_id=DGS10&api_key=unregistered00000000000000000000`,
        400,
        /^Bad Request\. {2}The value for variable api_key is not registered\. {2}Read https:/,
      ],
      [obs('series_id=NOPE'), 400, /^Bad Request\. {2}The series does not exist\.$/],
      [obs('series_id=DGS10&observation_start=2024-02-30'), 400, /observation_start is not a valid date/],
      [obs('series_id=DGS10&realtime_start=2024-02-01&realtime_end=2024-01-01'), 400, /realtime_start can not be after/],
      [obs('series_id=DGS10&limit=100001'), 400, /limit is not an integer between 1 and 100000/],
      [`${base}/fred/series/search?file_type=json&api_key=${KEY}`, 404, /^Not Found$/],
    ];
    for (const [url, status, message] of cases) {
      const r = await get(url);
      expect([url, r.status]).toEqual([url, status]);
      expect(Object.keys(r.body)).toEqual(['error_code', 'error_message']);
      expect(r.body.error_code).toBe(status);
      expect(r.body.error_message).toMatch(message);
    }
    // The four answers about parameters counted against the limit; the three about the key and the path did not.
    expect(mv.stats().venues.fred.weightUsed).toBe(4);
  });

  test("without file_type (FRED's default) or with xml: the same document and errors as XML", async () => {
    const query = `series_id=DGS10&observation_start=2024-07-01&observation_end=2024-07-05&api_key=${KEY}`;
    const json = (await get(obs('series_id=DGS10&observation_start=2024-07-01&observation_end=2024-07-05'))).body;
    for (const url of [`${base}/fred/series/observations?${query}`, `${base}/fred/series/observations?file_type=xml&${query}`]) {
      const r = await fetch(url);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/xml; charset=UTF-8');
      const text = await r.text();
      const lines = text.trimEnd().split('\n');
      expect(lines[0]).toBe('<?xml version="1.0" encoding="utf-8" ?>');
      expect(lines[1]).toBe(
        '<observations realtime_start="2024-07-20" realtime_end="2024-07-20" observation_start="2024-07-01" observation_end="2024-07-05" units="lin" output_type="1" file_type="xml" order_by="observation_date" sort_order="asc" count="5" offset="0" limit="100000">',
      );
      // the rows JSON serves, attribute for attribute
      const rows = lines.slice(2, -1).map((l) => Object.fromEntries([...l.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]])));
      expect(rows).toEqual(json.observations);
      expect(lines.at(-1)).toBe('</observations>');
    }
    const keyless = await fetch(`${base}/fred/series/observations?series_id=DGS10`);
    expect([keyless.status, keyless.headers.get('content-type'), await keyless.text()]).toEqual([
      400,
      'text/xml; charset=UTF-8',
      '<?xml version="1.0" encoding="utf-8" ?>\n<error code="400" message="Bad Request.  Variable api_key has not been set." />\n',
    ]);
    const unknown = await fetch(`${base}/fred/series/observations?series_id=NOPE&api_key=${KEY}`);
    expect([unknown.status, await unknown.text()]).toEqual([
      400,
      '<?xml version="1.0" encoding="utf-8" ?>\n<error code="400" message="Bad Request.  The series does not exist." />\n',
    ]);
    // a malformed answer (scenario control) in XML is cut off mid-document
    mv.patchScenario({ venues: { fred: { malformedRate: 1 } } });
    const cut = await (await fetch(`${base}/fred/series/observations?${query}`)).text();
    expect(cut.startsWith('<?xml version="1.0" encoding="utf-8" ?>\n<observations ')).toBe(true);
    expect(cut.includes('</observations>')).toBe(false);
    mv.patchScenario({ venues: { fred: { malformedRate: 0 } } });
    const other = await fetch(`${base}/fred/series/observations?file_type=csv&${query}`);
    expect([other.status, await other.text()]).toEqual([
      400,
      '<?xml version="1.0" encoding="utf-8" ?>\n<error code="400" message="Bad Request.  Variable file_type is not one of the following values: xml, json." />\n',
    ]);
  });

  test("120 requests per minute: the 121st answers 429 with FRED's body and no Retry-After", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 121; i++) statuses.push((await fetch(obs('series_id=UNRATE&observation_start=2024-01-01'))).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(120);
    const r = await get(obs('series_id=UNRATE'));
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ error_code: 429, error_message: 'Too Many Requests.  Exceeded Rate Limit' });
    expect(r.headers.get('retry-after')).toBeNull();
    expect(mv.stats().venues.fred).toMatchObject({ responses429: 2, maxWindowWeight: 120 });
  });

  test('the SIFMA holiday rules: observed dates, Saturday rules, Good Friday, Juneteenth from 2022', () => {
    const day = (y: number, m: number, d: number): number => Date.UTC(y, m - 1, d);
    expect(
      [
        day(2024, 1, 1),
        day(2024, 1, 15),
        day(2024, 3, 29),
        day(2024, 5, 27),
        day(2024, 6, 19),
        day(2024, 7, 4),
        day(2024, 11, 11),
        day(2024, 11, 28),
        day(2024, 12, 25),
        day(2020, 7, 3),
        day(2021, 12, 24),
        day(2023, 1, 2),
      ].map(isBondMarketHoliday),
    ).toEqual(Array(12).fill(true));
    // New Year's Day 2022 and Veterans Day 2023 fell on Saturdays: the Fridays before were open; Juneteenth only since 2022.
    expect([day(2021, 12, 31), day(2023, 11, 10), day(2021, 6, 18), day(2024, 7, 5)].map(isBondMarketHoliday)).toEqual([false, false, false, false]);
  });
});
