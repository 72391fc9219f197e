import { usEquitySessions, type Session } from './calendar.js';
import type { Job } from './job.js';
import type { Timeframe } from './timeframe.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * A venue whose candle jobs run as per-day units over many symbols at once (the per-vendor design's
 * `alpaca_bars` / `alpaca_minute`): one unit fetches one trading day for every job of the same venue
 * and timeframe that owes that day, in requests of up to `symbolsPerRequest` symbols, so one request
 * serves many jobs.
 */
export interface SessionDayVenue {
  /** Symbols one request names (Alpaca's multi-symbol bars: 100). */
  symbolsPerRequest: number;
  /** Symbols one unit covers at most; more jobs owing the same day make more units. */
  symbolsPerUnit: number;
  /** Timeframes collected this way; the venue's other timeframes keep incremental units. */
  timeframes: readonly Timeframe[];
  /**
   * A day bar is final once its session has closed (`session`), or only once its 24 hours have
   * passed (`day-end`: Polygon's adapter keeps a day bar only after its full day, so a unit run
   * between the close and the next midnight would find it still open).
   */
  dayBarFinal: 'session' | 'day-end';
}

export const SESSION_DAY_VENUES: Readonly<Record<string, SessionDayVenue>> = Object.freeze({
  alpaca: { symbolsPerRequest: 100, symbolsPerUnit: 10_000, timeframes: ['1d', '1m'], dayBarFinal: 'session' },
  // Polygon's aggregates name one ticker per request; a unit covers a few symbols (the design's
  // NODE_POLYGON_SYMBOLS_PER_UNIT, POLYGON_SYMBOLS_PER_UNIT here) to bound how long it runs.
  polygon: { symbolsPerRequest: 1, symbolsPerUnit: 3, timeframes: ['1d'], dayBarFinal: 'day-end' },
});

/** Where a per-day job's history starts when it has no `since`, per timeframe. */
export interface SessionDayStarts {
  /** Minute bars start this many days back (the design's ALPACA_MINUTE_START_DAYS). @defaultValue 7 */
  minuteStartDays: number;
  /** Day bars start this many days back. @defaultValue 30 */
  dayStartDays: number;
}

export const DEFAULT_SESSION_DAY_STARTS: SessionDayStarts = { minuteStartDays: 7, dayStartDays: 30 };

/** The per-day settings of a job, or undefined when its runs are incremental units. */
export function sessionDayVenueOf(job: Pick<Job, 'venue' | 'type' | 'timeframe'>): SessionDayVenue | undefined {
  const venue = SESSION_DAY_VENUES[job.venue];
  if (!venue || job.type !== 'ohlcv' || !job.timeframe || !venue.timeframes.includes(job.timeframe)) return undefined;
  return venue;
}

/**
 * End-of-day gating: when a session day's bars of `tf` are final. Every bar of the day, the day
 * bar included, once after-hours trading has ended (`extendedCloseMs`, 20:00 New York, 17:00 after
 * an early close: after-hours trades still add to the day bar's volume, see calendar.ts
 * `finalBefore`), plus the 15 minutes a Basic-plan key may not ask Alpaca's SIP feed for
 * (Polygon's day bars: see `dayBarFinal`). A day is never fetched before this, so a half-open day
 * is never stored as final.
 */
export function sessionDayFinalAt(tf: Timeframe, session: Session, venue: Pick<SessionDayVenue, 'dayBarFinal'> = { dayBarFinal: 'session' }): number {
  const final = session.extendedCloseMs + 15 * MINUTE_MS;
  return tf === '1d' && venue.dayBarFinal === 'day-end' ? Math.max(final, session.dayStartMs + DAY_MS) : final;
}

/**
 * The cursor a per-day job holds once `session` is stored: the open time of the day's last slot
 * (the day bar itself for `1d`, the last minute of the New York day for intraday bars). The cursor
 * of such a job marks days done, not the newest bar, so a day without any bar (a halted symbol)
 * still counts as collected.
 */
export function sessionDayCursor(tf: Timeframe, session: Session): number {
  return tf === '1d' ? session.dayStartMs : session.dayStartMs + DAY_MS - MINUTE_MS;
}

/** The first session at or after `fromMs` (its day overlapping or after it). */
function firstSessionFrom(fromMs: number): Session {
  // at most a few closed days in a row: a two-week window always holds a session
  for (let t = fromMs; ; t += 14 * DAY_MS) {
    const found = usEquitySessions(t, t + 14 * DAY_MS).find((s) => s.dayStartMs + DAY_MS > fromMs);
    if (found) return found;
  }
}

/**
 * The session day a per-day job owes next: the session after its cursor, or, before its first
 * run, the first session from its `since` (else `starts` days back from `nowMs`) on.
 */
export function nextSessionDay(
  job: Pick<Job, 'timeframe' | 'since' | 'cursor'>,
  nowMs: number,
  starts: SessionDayStarts = DEFAULT_SESSION_DAY_STARTS,
): Session {
  // the first session whose day starts after the cursor (its day overlaps [cursor + 1 day, …))
  if (job.cursor !== null) return firstSessionFrom(job.cursor + DAY_MS);
  const days = job.timeframe === '1d' ? starts.dayStartDays : starts.minuteStartDays;
  const start = job.since ?? nowMs - days * DAY_MS;
  // a day bar opens at its day's start, so the first one collected starts at or after `start`;
  // minute bars take the whole day `start` falls in
  return firstSessionFrom(job.timeframe === '1d' ? start + DAY_MS - 1 : start);
}

/** The session after `session`. */
export function sessionAfter(session: Session): Session {
  return firstSessionFrom(session.dayStartMs + DAY_MS);
}
