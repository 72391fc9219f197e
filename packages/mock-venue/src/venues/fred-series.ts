import { roundTo, unitFloat } from '../data/random.js';
import { isBondMarketHoliday, isWeekday } from './fred-calendar.js';

const DAY_MS = 86_400_000;
/** First observation date of every emulated series (real FRED series start decades earlier). */
export const FRED_SERIES_START_MS = Date.UTC(2000, 0, 1);

/** One published value of an observation: in force from `startMs` (UTC day) until the next vintage. */
export interface Vintage {
  startMs: number;
  /** The value as FRED prints it, with the series' decimals (`"4.20"`); null: no value for the date (FRED's "."). */
  value: string | null;
}

interface SeriesSpec {
  /** `business`: weekdays, "." on bond-market holidays; `daily`: every day; `monthly`: the 1st of each month. */
  frequency: 'business' | 'daily' | 'monthly';
  base: number;
  amplitude: number;
  /** Upward drift per year (CPI's inflation). */
  trendPerYear: number;
  decimals: number;
  /** Monthly series: day of the following month the first value is published. */
  releaseDay?: number;
  /** Monthly series: a revision is published one month after the first release, this much off. */
  revisionDelta?: number;
}

const TREASURY_TENORS = ['DGS1MO', 'DGS3MO', 'DGS6MO', 'DGS1', 'DGS2', 'DGS3', 'DGS5', 'DGS7', 'DGS10', 'DGS20', 'DGS30'];

/**
 * The series the emulation serves: the Treasury constant-maturity curve (business days, published
 * the next day), the effective federal funds rate DFF (every calendar day, published the next
 * day), CPIAUCSL (monthly, first released on the 12th of the next month and revised a month
 * later) and UNRATE (monthly, released on the 5th of the next month, never revised).
 */
const SERIES: Record<string, SeriesSpec> = {
  ...Object.fromEntries(
    TREASURY_TENORS.map((id, i) => [id, { frequency: 'business', base: 1.5 + 0.2 * i, amplitude: 1.2, trendPerYear: 0, decimals: 2 } satisfies SeriesSpec]),
  ),
  DFF: { frequency: 'daily', base: 2.2, amplitude: 1.5, trendPerYear: 0, decimals: 2 },
  CPIAUCSL: { frequency: 'monthly', base: 170, amplitude: 0.4, trendPerYear: 4, decimals: 3, releaseDay: 12, revisionDelta: 0.1 },
  UNRATE: { frequency: 'monthly', base: 5.5, amplitude: 1.5, trendPerYear: 0, decimals: 1, releaseDay: 5 },
};

export function isFredSeries(id: string): boolean {
  return Object.hasOwn(SERIES, id);
}

/** Observation dates of `id` in `[fromMs, toMs]` (UTC days), ascending. */
export function observationDates(id: string, fromMs: number, toMs: number): number[] {
  const spec = SERIES[id];
  if (!spec) return [];
  const out: number[] = [];
  const start = Math.max(fromMs, FRED_SERIES_START_MS);
  if (spec.frequency === 'monthly') {
    const d = new Date(start);
    let m = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + (d.getUTCDate() === 1 ? 0 : 1), 1);
    for (; m <= toMs; m = nextMonth(m)) out.push(m);
    return out;
  }
  for (let t = start; t <= toMs; t += DAY_MS) if (spec.frequency === 'daily' || isWeekday(t)) out.push(t);
  return out;
}

/** Every vintage of the observation of `id` dated `dateMs`, oldest first (none published yet is still listed). */
export function vintagesOf(id: string, dateMs: number, seed: number): Vintage[] {
  const spec = SERIES[id];
  if (!spec) return [];
  if (spec.frequency !== 'monthly') {
    const value = spec.frequency === 'business' && isBondMarketHoliday(dateMs) ? null : valueAt(id, spec, dateMs, seed).toFixed(spec.decimals);
    return [{ startMs: dateMs + DAY_MS, value }];
  }
  const first = nextMonth(dateMs) + ((spec.releaseDay ?? 1) - 1) * DAY_MS;
  const value = valueAt(id, spec, dateMs, seed);
  const out: Vintage[] = [{ startMs: first, value: value.toFixed(spec.decimals) }];
  if (spec.revisionDelta !== undefined) {
    const revisedMs = nextMonth(nextMonth(dateMs)) + ((spec.releaseDay ?? 1) - 1) * DAY_MS;
    out.push({ startMs: revisedMs, value: (value + spec.revisionDelta).toFixed(spec.decimals) });
  }
  return out;
}

/** A smooth cycle plus trend plus deterministic noise: a pure function of (series, date, seed). */
function valueAt(id: string, spec: SeriesSpec, dateMs: number, seed: number): number {
  const days = (dateMs - FRED_SERIES_START_MS) / DAY_MS;
  const cycle = spec.amplitude * Math.sin((2 * Math.PI * days) / 1461 + unitFloat('fred-phase', id, seed) * 2 * Math.PI);
  const noise = (unitFloat('fred', id, dateMs, seed) - 0.5) * spec.amplitude * 0.1;
  return roundTo(Math.max(0.01, spec.base + (spec.trendPerYear * days) / 365.25 + cycle + noise), spec.decimals);
}

function nextMonth(monthMs: number): number {
  const d = new Date(monthMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
