import { ValidationError } from './errors/validation-error.js';
import { alignDown, timeframeMs, type Timeframe } from './timeframe.js';

/**
 * Trading calendars: when a venue trades, so that the gap ledger, `data count` and end-of-day
 * gating expect bars only where the venue produces them.
 *
 * - `24/7` (crypto venues): every candle of the UTC grid exists.
 * - `us-equity` (Polygon, Alpaca): NYSE/Nasdaq regular sessions, 09:30-16:00 America/New_York,
 *   13:00 on early-close days; no weekends, no exchange holidays. Daily bars are stamped at the
 *   session date's midnight in New York (05:00Z in winter, 04:00Z in summer), as Polygon's and
 *   Alpaca's daily aggregates are: that is the one grid tickfleet stores US-equity day bars on.
 *
 * The US-equity holidays are computed from the exchange's published rules (below) plus a table of
 * unscheduled closures that has to be kept current; it was last reviewed on 2026-11-26 against
 * NYSE's published holiday and early-close calendars for 2024-2027.
 */
export const CALENDAR_NAMES = ['24/7', 'us-equity'] as const;
export type CalendarName = (typeof CALENDAR_NAMES)[number];

/** One trading session: its New York date and its regular hours (epoch ms). */
export interface Session {
  /** The session's date in New York, `YYYY-MM-DD`. */
  date: string;
  /** Midnight of `date` in New York: the open time of the session's daily bar. */
  dayStartMs: number;
  /** Regular open (09:30 New York). */
  openMs: number;
  /** Regular close (16:00 New York, 13:00 on an early-close day). */
  closeMs: number;
  /** Start of pre-market trading (04:00 New York). */
  extendedOpenMs: number;
  /**
   * End of after-hours trading (20:00 New York, 17:00 on an early-close day). Extended-hours trades
   * still add to the day's volume, so a daily bar is final only from here on.
   */
  extendedCloseMs: number;
  earlyClose: boolean;
}

export interface TradingCalendar {
  readonly name: CalendarName;
  /**
   * Open times of the candles of `tf` the venue produces in `[fromMs, toMs)`, ascending: the
   * ground truth the gap ledger and `data count` compare stored candles with.
   */
  expectedOpenTimes(tf: Timeframe, fromMs: number, toMs: number): number[];
  /**
   * End-of-day gating: the end (exclusive) of the candle open times that are final at `nowMs`.
   * A candle whose open time is below it is closed for good; at or above it, the candle (or the
   * session it belongs to) may still change and must not be stored as final.
   */
  finalBefore(tf: Timeframe, nowMs: number): number;
  /**
   * The first instant after `afterMs` at which another candle of `tf` becomes final (when
   * `finalBefore` moves on): when a live job is next worth running. On a 24/7 venue the next
   * candle close; on US equities day bars after each session's after-hours, intraday candles only
   * from pre-market to after-hours of sessions (no runs over nights, weekends and holidays).
   */
  nextFinalAt(tf: Timeframe, afterMs: number): number;
  /**
   * Open time of the first candle the calendar expects after `afterMs` (the first of
   * `expectedOpenTimes(tf, afterMs + 1, …)`, found without listing): what a job whose cursor is at
   * `afterMs` waits for next. Its age is the job's cursor lag; nights, weekends and holidays add none.
   */
  nextExpectedOpen(tf: Timeframe, afterMs: number): number;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** Every candle of the UTC grid exists; a candle is final once its close time has passed. */
export const ALWAYS_OPEN_CALENDAR: TradingCalendar = {
  name: '24/7',
  expectedOpenTimes(tf, fromMs, toMs) {
    const len = timeframeMs(tf);
    const out: number[] = [];
    let t = alignDown(fromMs, tf);
    if (t < fromMs) t += len;
    for (; t < toMs; t += len) out.push(t);
    return out;
  },
  finalBefore(tf, nowMs) {
    return alignDown(nowMs, tf);
  },
  nextFinalAt(tf, afterMs) {
    return alignDown(afterMs, tf) + timeframeMs(tf);
  },
  nextExpectedOpen(tf, afterMs) {
    return alignDown(afterMs, tf) + timeframeMs(tf);
  },
};

// ---------------------------------------------------------------------------------------------
// US equity (NYSE rules)

/**
 * Full-day closures outside the yearly rules (national days of mourning, weather, 9/11), as NYSE
 * announced them. Keep current: add a date when the exchange announces one.
 */
const UNSCHEDULED_CLOSURES: ReadonlySet<string> = new Set([
  '2001-09-11',
  '2001-09-12',
  '2001-09-13',
  '2001-09-14',
  '2004-06-11', // President Reagan
  '2007-01-02', // President Ford
  '2012-10-29', // Hurricane Sandy
  '2012-10-30',
  '2018-12-05', // President G. H. W. Bush
  '2025-01-09', // President Carter
]);

/** The earliest year the rules below describe (Martin Luther King Jr. Day closes NYSE from 1998). */
export const US_EQUITY_FIRST_YEAR = 1998;

function ymd(year: number, month: number, day: number): string {
  return `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** Day of week (0 = Sunday) of a calendar date. */
function weekday(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay();
}

/** Day of the month of the `n`-th `dow` (0 Sunday .. 6 Saturday) of `month` (1-12); n = -1: the last one. */
export function nthWeekday(year: number, month: number, dow: number, n: number): number {
  if (n > 0) {
    const first = weekday(year, month, 1);
    return 1 + ((dow - first + 7) % 7) + (n - 1) * 7;
  }
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const last = weekday(year, month, lastDay);
  return lastDay - ((last - dow + 7) % 7);
}

/** Easter Sunday (Gregorian, anonymous algorithm: Meeus/Jones/Butcher) as [month 1-12, day]. */
export function easter(year: number): [number, number] {
  const a = year % 19;
  const b = Math.floor(year / 100);
  const c = year % 100;
  const d = Math.floor(b / 4);
  const e = b % 4;
  const f = Math.floor((b + 8) / 25);
  const g = Math.floor((b - f + 1) / 3);
  const h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4);
  const k = c % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  return [month, day];
}

/** A fixed-date holiday as observed: Saturday -> the Friday before, Sunday -> the Monday after. */
function observed(year: number, month: number, day: number): string {
  const dow = weekday(year, month, day);
  const d = new Date(Date.UTC(year, month - 1, day + (dow === 6 ? -1 : dow === 0 ? 1 : 0)));
  return ymd(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate());
}

const holidayCache = new Map<number, { closed: Set<string>; early: Set<string> }>();

/** NYSE's holidays and early closes of one year, from the exchange's rules (Rule 7.2). */
function usEquityYear(year: number): { closed: Set<string>; early: Set<string> } {
  const cached = holidayCache.get(year);
  if (cached) return cached;
  const closed = new Set<string>();
  // New Year's Day: a Saturday New Year is not observed on the Friday before (it would close the
  // previous year's last session); a Sunday one moves to Monday.
  if (weekday(year, 1, 1) !== 6) closed.add(observed(year, 1, 1));
  closed.add(ymd(year, 1, nthWeekday(year, 1, 1, 3))); // Martin Luther King Jr. Day
  closed.add(ymd(year, 2, nthWeekday(year, 2, 1, 3))); // Washington's Birthday
  const [em, ed] = easter(year);
  const goodFriday = new Date(Date.UTC(year, em - 1, ed - 2));
  closed.add(ymd(year, goodFriday.getUTCMonth() + 1, goodFriday.getUTCDate()));
  closed.add(ymd(year, 5, nthWeekday(year, 5, 1, -1))); // Memorial Day
  if (year >= 2022) closed.add(observed(year, 6, 19)); // Juneteenth
  closed.add(observed(year, 7, 4));
  closed.add(ymd(year, 9, nthWeekday(year, 9, 1, 1))); // Labor Day
  const thanksgiving = nthWeekday(year, 11, 4, 4);
  closed.add(ymd(year, 11, thanksgiving));
  closed.add(observed(year, 12, 25));
  for (const date of UNSCHEDULED_CLOSURES) if (date.startsWith(`${year}-`)) closed.add(date);

  // Early closes (13:00): the day before Independence Day and Christmas Eve when they are Monday to
  // Thursday sessions, and the day after Thanksgiving.
  const early = new Set<string>();
  const jul3 = weekday(year, 7, 3);
  if (jul3 >= 1 && jul3 <= 4) early.add(ymd(year, 7, 3));
  early.add(ymd(year, 11, thanksgiving + 1));
  const dec24 = weekday(year, 12, 24);
  if (dec24 >= 1 && dec24 <= 4) early.add(ymd(year, 12, 24));
  for (const date of early) if (closed.has(date)) early.delete(date);
  const entry = { closed, early };
  holidayCache.set(year, entry);
  return entry;
}

/**
 * New York's offset from UTC in hours on a date (-5 standard, -4 daylight), by the US rules:
 * from 2007 the second Sunday of March to the first Sunday of November, before that the first
 * Sunday of April to the last Sunday of October. Midnight and the session hours are never inside
 * the 02:00 switch, so the date alone decides.
 */
function newYorkOffsetHours(year: number, month: number, day: number): number {
  const [startMonth, startDay, endMonth, endDay] =
    year >= 2007 ? [3, nthWeekday(year, 3, 0, 2), 11, nthWeekday(year, 11, 0, 1)] : [4, nthWeekday(year, 4, 0, 1), 10, nthWeekday(year, 10, 0, -1)];
  const key = month * 100 + day;
  return key >= startMonth * 100 + startDay && key < endMonth * 100 + endDay ? -4 : -5;
}

/** Epoch ms of `hour:minute` New York time on a date. */
function newYorkTime(year: number, month: number, day: number, hour: number, minute = 0): number {
  return Date.UTC(year, month - 1, day, hour, minute) - newYorkOffsetHours(year, month, day) * HOUR_MS;
}

/** The US-equity session on a New York date, or undefined when the exchange is closed. */
export function usEquitySession(date: string): Session | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) throw new ValidationError('date', 'a date YYYY-MM-DD', date);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < US_EQUITY_FIRST_YEAR) throw new ValidationError('date', `a date from ${US_EQUITY_FIRST_YEAR} on (the US-equity calendar starts there)`, date);
  const dow = weekday(year, month, day);
  if (dow === 0 || dow === 6) return undefined;
  const { closed, early } = usEquityYear(year);
  if (closed.has(date)) return undefined;
  const earlyClose = early.has(date);
  return {
    date,
    dayStartMs: newYorkTime(year, month, day, 0),
    openMs: newYorkTime(year, month, day, 9, 30),
    closeMs: newYorkTime(year, month, day, earlyClose ? 13 : 16),
    extendedOpenMs: newYorkTime(year, month, day, 4),
    extendedCloseMs: newYorkTime(year, month, day, earlyClose ? 17 : 20),
    earlyClose,
  };
}

/** US-equity sessions whose day (New York midnight to midnight) overlaps `[fromMs, toMs)`, ascending. */
export function usEquitySessions(fromMs: number, toMs: number): Session[] {
  const out: Session[] = [];
  // New York midnight is 04:00Z or 05:00Z: the UTC date of `ms - 5 h` is never after the New York
  // date, so start there and walk whole days.
  for (let t = Math.floor((fromMs - 5 * HOUR_MS) / DAY_MS) * DAY_MS; t < toMs; t += DAY_MS) {
    const d = new Date(t);
    const date = ymd(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate());
    if (d.getUTCFullYear() < US_EQUITY_FIRST_YEAR) continue;
    const session = usEquitySession(date);
    if (session && session.dayStartMs + DAY_MS > fromMs && session.dayStartMs < toMs) out.push(session);
  }
  return out;
}

export const US_EQUITY_CALENDAR: TradingCalendar = {
  name: 'us-equity',
  expectedOpenTimes(tf, fromMs, toMs) {
    if (tf === '1w') throw new ValidationError('timeframe', 'a timeframe up to 1d (weekly bars have no grid on the us-equity calendar)', tf);
    const out: number[] = [];
    if (tf === '1d') {
      for (const s of usEquitySessions(fromMs, toMs)) if (s.dayStartMs >= fromMs && s.dayStartMs < toMs) out.push(s.dayStartMs);
      return out;
    }
    // Intraday: every grid candle that overlaps the regular session. Extended-hours bars a venue
    // returns are stored but not expected (they exist only when something traded).
    const len = timeframeMs(tf);
    for (const s of usEquitySessions(fromMs, toMs)) {
      for (let t = alignDown(s.openMs, tf); t < s.closeMs; t += len) if (t >= fromMs && t < toMs) out.push(t);
    }
    return out;
  },
  finalBefore(tf, nowMs) {
    if (tf !== '1d') return alignDown(nowMs, tf);
    // A day bar is final once its session is over: the bar of today's session only after the end of
    // after-hours trading, whose trades still add to the day's volume (Polygon's and Alpaca's daily
    // bars count them; the SIPs' consolidated rules let them update volume, not OHLC).
    const today = usEquitySessions(nowMs - DAY_MS, nowMs + 1).at(-1);
    return !today || nowMs >= today.extendedCloseMs ? nowMs : today.dayStartMs;
  },
  nextFinalAt(tf, afterMs) {
    if (tf === '1w') return ALWAYS_OPEN_CALENDAR.nextFinalAt(tf, afterMs);
    const len = timeframeMs(tf);
    const nextClose = alignDown(afterMs, tf) + len;
    return firstSessionMatch(afterMs, (s) => {
      if (tf === '1d') return s.extendedCloseMs > afterMs ? s.extendedCloseMs : undefined;
      // Candle closes with trading in them: from the first pre-market candle's to the last after-hours one's.
      const first = alignDown(s.extendedOpenMs, tf) + len;
      const last = alignDown(s.extendedCloseMs - 1, tf) + len;
      return nextClose <= last ? Math.max(nextClose, first) : undefined;
    });
  },
  nextExpectedOpen(tf, afterMs) {
    if (tf === '1w') return ALWAYS_OPEN_CALENDAR.nextExpectedOpen(tf, afterMs);
    const next = alignDown(afterMs, tf) + timeframeMs(tf);
    return firstSessionMatch(afterMs, (s) => {
      if (tf === '1d') return s.dayStartMs > afterMs ? s.dayStartMs : undefined;
      const last = alignDown(s.closeMs - 1, tf);
      return next <= last ? Math.max(next, alignDown(s.openMs, tf)) : undefined;
    });
  },
};

/**
 * The first defined answer of `match` over the sessions from the day before `afterMs` on, looked up
 * a few days at a time (the scheduler and the dashboard ask for every job). The longest closure
 * (9/11) kept the exchange shut for 4 weekdays: 3 weeks always hold a session.
 */
function firstSessionMatch(afterMs: number, match: (s: Session) => number | undefined): number {
  for (let from = afterMs - DAY_MS; from < afterMs + 21 * DAY_MS; from += 5 * DAY_MS) {
    for (const s of usEquitySessions(from, from + 5 * DAY_MS)) {
      const found = match(s);
      if (found !== undefined) return found;
    }
  }
  throw new ValidationError('afterMs', 'a time followed by a US-equity session within 3 weeks', afterMs);
}

/** Which calendar a venue trades on; venues not listed trade around the clock. */
export const VENUE_CALENDARS: Readonly<Record<string, CalendarName>> = Object.freeze({ polygon: 'us-equity', alpaca: 'us-equity' });

export function calendarFor(venue: string): TradingCalendar {
  return VENUE_CALENDARS[venue] === 'us-equity' ? US_EQUITY_CALENDAR : ALWAYS_OPEN_CALENDAR;
}
