import { ALWAYS_OPEN_CALENDAR, US_EQUITY_CALENDAR, calendarFor, usEquitySession, usEquitySessions } from './calendar.js';
import { ValidationError } from './errors/validation-error.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** NYSE's published full-day closures (nyse.com "Holidays & Trading Hours"), weekdays only. */
const NYSE_CLOSED: Record<number, string[]> = {
  2024: ['2024-01-01', '2024-01-15', '2024-02-19', '2024-03-29', '2024-05-27', '2024-06-19', '2024-07-04', '2024-09-02', '2024-11-28', '2024-12-25'],
  2025: [
    '2025-01-01',
    '2025-01-09',
    '2025-01-20',
    '2025-02-17',
    '2025-04-18',
    '2025-05-26',
    '2025-06-19',
    '2025-07-04',
    '2025-09-01',
    '2025-11-27',
    '2025-12-25',
  ],
  2026: ['2026-01-01', '2026-01-19', '2026-02-16', '2026-04-03', '2026-05-25', '2026-06-19', '2026-07-03', '2026-09-07', '2026-11-26', '2026-12-25'],
  2027: ['2027-01-01', '2027-01-18', '2027-02-15', '2027-03-26', '2027-05-31', '2027-06-18', '2027-07-05', '2027-09-06', '2027-11-25', '2027-12-24'],
};
/** ... and its early closes at 13:00. */
const NYSE_EARLY: Record<number, string[]> = {
  2024: ['2024-07-03', '2024-11-29', '2024-12-24'],
  2025: ['2025-07-03', '2025-11-28', '2025-12-24'],
  2026: ['2026-11-27', '2026-12-24'],
  2027: ['2027-11-26'],
};

function weekdaysOf(year: number): string[] {
  const out: string[] = [];
  for (let t = Date.UTC(year, 0, 1); t < Date.UTC(year + 1, 0, 1); t += 86_400_000) {
    const dow = new Date(t).getUTCDay();
    if (dow !== 0 && dow !== 6) out.push(iso(t).slice(0, 10));
  }
  return out;
}

describe('US-equity calendar', () => {
  test.each([2024, 2025, 2026, 2027])('%i: closed weekdays and early closes match NYSE', (year) => {
    const days = weekdaysOf(year);
    expect(days.filter((d) => usEquitySession(d) === undefined)).toEqual(NYSE_CLOSED[year]);
    expect(days.filter((d) => usEquitySession(d)?.earlyClose)).toEqual(NYSE_EARLY[year]);
  });

  test('sessions are 09:30-16:00 New York, day bars stamped at New York midnight (05:00Z winter, 04:00Z summer)', () => {
    const winter = usEquitySession('2024-01-16')!;
    expect([iso(winter.dayStartMs), iso(winter.openMs), iso(winter.closeMs)]).toEqual([
      '2024-01-16T05:00:00.000Z',
      '2024-01-16T14:30:00.000Z',
      '2024-01-16T21:00:00.000Z',
    ]);
    const summer = usEquitySession('2024-07-03')!;
    expect([iso(summer.dayStartMs), iso(summer.openMs), iso(summer.closeMs)]).toEqual([
      '2024-07-03T04:00:00.000Z',
      '2024-07-03T13:30:00.000Z',
      '2024-07-03T17:00:00.000Z',
    ]);
    // The DST switch days themselves: 2024-03-11 (first Monday of daylight time), 2024-11-04 (first of standard).
    expect(iso(usEquitySession('2024-03-08')!.dayStartMs)).toBe('2024-03-08T05:00:00.000Z');
    expect(iso(usEquitySession('2024-03-11')!.dayStartMs)).toBe('2024-03-11T04:00:00.000Z');
    expect(iso(usEquitySession('2024-11-01')!.dayStartMs)).toBe('2024-11-01T04:00:00.000Z');
    expect(iso(usEquitySession('2024-11-04')!.dayStartMs)).toBe('2024-11-04T05:00:00.000Z');
    // Before 2007 daylight time ran from April's first Sunday to October's last.
    expect(iso(usEquitySession('2005-03-14')!.dayStartMs)).toBe('2005-03-14T05:00:00.000Z');
    expect(iso(usEquitySession('2005-04-04')!.dayStartMs)).toBe('2005-04-04T04:00:00.000Z');
  });

  test('New York offsets agree with the IANA time-zone data for every session 1998-2027', () => {
    const fmt = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'America/New_York',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    const wrong: string[] = [];
    const sessions = usEquitySessions(Date.parse('1998-01-01T12:00:00Z'), Date.parse('2028-01-01T00:00:00Z'));
    expect(sessions.length).toBeGreaterThan(7500);
    for (const s of sessions) {
      const local = fmt.format(s.dayStartMs).replace(',', '');
      if (local !== `${s.date} 00:00`) wrong.push(`${s.date}: ${local}`);
    }
    expect(wrong).toEqual([]);
  });

  test('day bars expected only for sessions: a holiday week', () => {
    // Thanksgiving week 2026: Mon-Wed full, Thu closed, Fri early close, weekend closed.
    const from = Date.parse('2026-11-23T00:00:00Z');
    const to = Date.parse('2026-11-30T00:00:00Z');
    expect(US_EQUITY_CALENDAR.expectedOpenTimes('1d', from, to).map(iso)).toEqual([
      '2026-11-23T05:00:00.000Z',
      '2026-11-24T05:00:00.000Z',
      '2026-11-25T05:00:00.000Z',
      '2026-11-27T05:00:00.000Z',
    ]);
    expect(usEquitySessions(from, to).map((s) => s.date)).toEqual(['2026-11-23', '2026-11-24', '2026-11-25', '2026-11-27']);
  });

  test('intraday bars expected inside regular hours, early closes shortened', () => {
    const day = Date.parse('2026-11-27T00:00:00Z');
    const minutes = US_EQUITY_CALENDAR.expectedOpenTimes('1m', day, day + 86_400_000);
    expect(minutes).toHaveLength(210); // 09:30-13:00
    expect(iso(minutes[0]!)).toBe('2026-11-27T14:30:00.000Z');
    expect(iso(minutes.at(-1)!)).toBe('2026-11-27T17:59:00.000Z');
    const fullDay = Date.parse('2026-11-25T00:00:00Z');
    expect(US_EQUITY_CALENDAR.expectedOpenTimes('1m', fullDay, fullDay + 86_400_000)).toHaveLength(390);
    // Hourly: every grid hour that overlaps 09:30-16:00, 09:00 through 15:00.
    expect(US_EQUITY_CALENDAR.expectedOpenTimes('1h', fullDay, fullDay + 86_400_000)).toHaveLength(7);
    expect(() => US_EQUITY_CALENDAR.expectedOpenTimes('1w', fullDay, fullDay + 86_400_000)).toThrow(ValidationError);
  });

  test('end-of-day gating: a session is final only after its after-hours trading ended', () => {
    const session = usEquitySession('2026-11-25')!;
    expect([iso(session.extendedOpenMs), iso(session.extendedCloseMs)]).toEqual(['2026-11-25T09:00:00.000Z', '2026-11-26T01:00:00.000Z']);
    const early = usEquitySession('2026-11-27')!;
    expect(iso(early.extendedCloseMs)).toBe('2026-11-27T22:00:00.000Z'); // 17:00 New York after a 13:00 close
    // During the session and its after-hours trading (which still adds volume), its day bar is not final; the previous ones are.
    expect(US_EQUITY_CALENDAR.finalBefore('1d', session.openMs + 60_000)).toBe(session.dayStartMs);
    expect(US_EQUITY_CALENDAR.finalBefore('1d', session.closeMs)).toBe(session.dayStartMs);
    expect(US_EQUITY_CALENDAR.finalBefore('1d', session.extendedCloseMs - 1)).toBe(session.dayStartMs);
    // After the end of after-hours trading it is.
    expect(US_EQUITY_CALENDAR.finalBefore('1d', session.extendedCloseMs)).toBeGreaterThan(session.dayStartMs);
    // Thanksgiving (closed): everything up to now is final.
    const thanksgivingNoon = Date.parse('2026-11-26T17:00:00Z');
    expect(US_EQUITY_CALENDAR.finalBefore('1d', thanksgivingNoon)).toBe(thanksgivingNoon);
    // Intraday: the usual closed-candle rule.
    expect(US_EQUITY_CALENDAR.finalBefore('1m', session.openMs + 90_500)).toBe(session.openMs + 60_000);
  });

  test('nextFinalAt: when a live job is next worth running', () => {
    const at = (tf: '1m' | '1h' | '1d', whenIso: string) => iso(US_EQUITY_CALENDAR.nextFinalAt(tf, Date.parse(whenIso)));
    // Day bars: at the end of after-hours trading of the next session (Wednesday 20:00 New York; Thanksgiving closed, Friday closes early)
    expect(at('1d', '2026-11-25T18:00:00Z')).toBe('2026-11-26T01:00:00.000Z');
    expect(at('1d', '2026-11-26T01:00:00Z')).toBe('2026-11-27T22:00:00.000Z');
    // Intraday: every close during the trading day, then the first pre-market close of the next session
    expect(at('1m', '2026-11-25T15:00:30Z')).toBe('2026-11-25T15:01:00.000Z');
    expect(at('1m', '2026-11-26T01:00:00Z')).toBe('2026-11-27T09:01:00.000Z');
    expect(at('1h', '2026-11-27T21:30:00Z')).toBe('2026-11-27T22:00:00.000Z');
    expect(at('1h', '2026-11-27T22:00:00Z')).toBe('2026-11-30T10:00:00.000Z'); // Saturday and Sunday skipped
    expect(ALWAYS_OPEN_CALENDAR.nextFinalAt('1m', Date.parse('2026-11-26T01:00:00Z'))).toBe(Date.parse('2026-11-26T01:01:00Z'));
  });

  test('nextExpectedOpen: the next candle a job waits for (no lag over nights, weekends, holidays)', () => {
    const at = (tf: '1m' | '1h' | '1d', whenIso: string) => iso(US_EQUITY_CALENDAR.nextExpectedOpen(tf, Date.parse(whenIso)));
    expect(at('1d', '2026-11-25T05:00:00Z')).toBe('2026-11-27T05:00:00.000Z'); // Thanksgiving skipped
    expect(at('1m', '2026-11-25T15:00:00Z')).toBe('2026-11-25T15:01:00.000Z');
    expect(at('1m', '2026-11-25T20:59:00Z')).toBe('2026-11-27T14:30:00.000Z'); // the last regular minute, then Friday's open
    expect(at('1h', '2026-11-27T17:00:00Z')).toBe('2026-11-30T14:00:00.000Z'); // 12:00 New York is the early close's last hour
    expect(ALWAYS_OPEN_CALENDAR.nextExpectedOpen('1m', Date.parse('2026-11-26T01:00:00Z'))).toBe(Date.parse('2026-11-26T01:01:00Z'));
    // agrees with the listing
    const from = Date.parse('2026-11-20T00:00:00Z');
    const listed = US_EQUITY_CALENDAR.expectedOpenTimes('1h', from, from + 14 * 86_400_000);
    for (let i = 0; i + 1 < listed.length; i++) expect(US_EQUITY_CALENDAR.nextExpectedOpen('1h', listed[i]!)).toBe(listed[i + 1]);
  });

  test('bad dates are refused with the input named', () => {
    expect(() => usEquitySession('2026-1-5')).toThrow(/invalid date: expected a date YYYY-MM-DD, got "2026-1-5"/);
    expect(() => usEquitySession('1990-01-02')).toThrow(/from 1998/);
  });
});

describe('24/7 calendar', () => {
  test('every grid candle, final once closed', () => {
    const from = Date.parse('2026-11-26T00:00:00Z');
    expect(ALWAYS_OPEN_CALENDAR.expectedOpenTimes('1d', from, from + 7 * 86_400_000)).toHaveLength(7);
    expect(ALWAYS_OPEN_CALENDAR.expectedOpenTimes('1h', from + 1, from + 3 * 3_600_000)).toHaveLength(2);
    expect(ALWAYS_OPEN_CALENDAR.finalBefore('1d', from + 5)).toBe(from);
  });

  test('venues map to their calendars', () => {
    expect(calendarFor('polygon').name).toBe('us-equity');
    expect(calendarFor('alpaca').name).toBe('us-equity');
    expect(calendarFor('binance').name).toBe('24/7');
  });
});
