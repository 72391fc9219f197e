/**
 * US bond-market full-day closes as SIFMA recommends them, by rule (the emulation's holiday table;
 * FRED's daily H.15 Treasury series have a `"."` observation on each). Observed dates: a holiday
 * on a Sunday closes the Monday after; on a Saturday, Independence Day, Juneteenth and Christmas
 * close the Friday before, while New Year's Day and Veterans Day on a Saturday close nothing
 * (SIFMA keeps the market open that Friday). Simplification: Good Friday is always a full close
 * (in some years SIFMA recommends an early close instead, when the jobs report falls on it), and
 * early closes (the eves of holidays) are ordinary days here, as they are in the H.15 data.
 */
import { easter, nthWeekday as nthWeekdayOfMonth } from '@tickfleet/core';

const DAY_MS = 86_400_000;

/** Whether `dayMs` (UTC midnight) is a weekday on which the US bond market is closed. */
export function isBondMarketHoliday(dayMs: number): boolean {
  const year = new Date(dayMs).getUTCFullYear();
  return holidaysOf(year).has(dayMs);
}

/** Monday to Friday. */
export function isWeekday(dayMs: number): boolean {
  const dow = new Date(dayMs).getUTCDay();
  return dow >= 1 && dow <= 5;
}

const cache = new Map<number, ReadonlySet<number>>();

function holidaysOf(year: number): ReadonlySet<number> {
  const hit = cache.get(year);
  if (hit) return hit;
  const days = [
    observed(Date.UTC(year, 0, 1), false),
    nthWeekday(year, 0, 1, 3), // Martin Luther King Jr. Day: third Monday of January
    nthWeekday(year, 1, 1, 3), // Washington's Birthday: third Monday of February
    easterSunday(year) - 2 * DAY_MS, // Good Friday
    lastWeekday(year, 4, 1), // Memorial Day: last Monday of May
    ...(year >= 2022 ? [observed(Date.UTC(year, 5, 19), true)] : []), // Juneteenth, a SIFMA holiday since 2022
    observed(Date.UTC(year, 6, 4), true),
    nthWeekday(year, 8, 1, 1), // Labor Day: first Monday of September
    nthWeekday(year, 9, 1, 2), // Columbus Day: second Monday of October
    observed(Date.UTC(year, 10, 11), false),
    nthWeekday(year, 10, 4, 4), // Thanksgiving: fourth Thursday of November
    observed(Date.UTC(year, 11, 25), true),
  ].filter((d): d is number => d !== null);
  const set = new Set(days);
  cache.set(year, set);
  return set;
}

/** The weekday a fixed-date holiday closes: Sunday -> Monday; Saturday -> Friday when `fridayBefore`, else none. */
function observed(dayMs: number, fridayBefore: boolean): number | null {
  const dow = new Date(dayMs).getUTCDay();
  if (dow === 0) return dayMs + DAY_MS;
  if (dow === 6) return fridayBefore ? dayMs - DAY_MS : null;
  return dayMs;
}

/** The `n`th `weekday` (0 Sunday .. 6 Saturday) of `month` (0-based), UTC midnight. */
function nthWeekday(year: number, month: number, weekday: number, n: number): number {
  return Date.UTC(year, month, nthWeekdayOfMonth(year, month + 1, weekday, n));
}

function lastWeekday(year: number, month: number, weekday: number): number {
  return Date.UTC(year, month, nthWeekdayOfMonth(year, month + 1, weekday, -1));
}

/** Gregorian Easter Sunday, UTC midnight. */
function easterSunday(year: number): number {
  const [month, day] = easter(year);
  return Date.UTC(year, month - 1, day);
}
