import { alignDown, lastClosedOpenTime, timeframeMs, US_EQUITY_FIRST_YEAR, usEquitySession, type Session, type Timeframe } from '@tickfleet/core';
import { candleValuesAt, canonicalSymbol, isHole, priceAt, type CandleValues } from '../data/candles.js';
import { roundTo, unitFloat } from '../data/random.js';
import type { Holes } from '../scenario.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Share of extended-hours minutes (04:00-09:30 and after the close until 20:00 New York) in which
 * the emulated ticker trades: real pre-market and after-hours minute bars are sparse, they exist
 * only when something traded.
 */
const EXTENDED_MINUTE_SHARE = 0.25;

/** One bar Polygon serves: its open time and values; `partial` while the day it belongs to is still trading. */
export interface PolygonBarValues extends CandleValues {
  partial: boolean;
}

/**
 * Where Polygon's US-stock bars exist, as the real aggregates endpoint serves them: only on trading
 * sessions of the US-equity calendar (no weekends, exchange holidays; early closes shortened).
 *
 * - Day bars open at the session date's midnight in New York (05:00Z winter, 04:00Z summer). The
 *   bar of today's session is served while it trades, with values still moving (`partial`); it is
 *   final from the end of after-hours trading, whose trades still add to its volume.
 * - Intraday bars open on the UTC grid (New York's offsets are whole hours, so that is also
 *   Polygon's top of the minute/hour), only closed ones: every bar overlapping the regular session,
 *   plus the extended-hours bars (04:00-09:30, close-20:00 New York, 17:00 after an early close) in
 *   which something traded, a deterministic sparse quarter of the minutes.
 *
 * The values are the deterministic candles of data/candles.ts (a day bar takes the values of the
 * UTC day of its date), so the emulation and the tests compute the same numbers.
 */
export function polygonBarTimes(
  ticker: string,
  tf: Timeframe,
  fromMs: number,
  toMs: number,
  nowMs: number,
  seed: number,
  order: 'asc' | 'desc',
): Iterable<number> {
  if (tf === '1w') throw new RangeError('week bars are not served by the Polygon emulation');
  const lastDate = Math.floor(Math.min(toMs, nowMs) / DAY_MS) * DAY_MS;
  // A 12h bar that opens before New York midnight can hold the previous day's after-hours minutes.
  const firstDate = Math.max(Math.floor((fromMs - DAY_MS) / DAY_MS) * DAY_MS, Date.UTC(US_EQUITY_FIRST_YEAR, 0, 1));
  const dates = function* (): Generator<number> {
    if (order === 'asc') for (let d = firstDate; d <= lastDate; d += DAY_MS) yield d;
    else for (let d = lastDate; d >= firstDate; d -= DAY_MS) yield d;
  };
  const lastClosed = lastClosedOpenTime(nowMs, tf);
  return (function* () {
    let previous = order === 'asc' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    for (const d of dates()) {
      const session = usEquitySession(new Date(d).toISOString().slice(0, 10));
      if (!session) continue;
      const times = tf === '1d' ? (nowMs >= session.openMs ? [session.dayStartMs] : []) : intradayTimes(ticker, tf, session, lastClosed, seed);
      if (order === 'desc') times.reverse();
      for (const t of times) {
        if (t < fromMs || t > toMs) continue;
        // Bars of a long timeframe can overlap two sessions' extended hours: each is served once.
        if (order === 'asc' ? t <= previous : t >= previous) continue;
        previous = t;
        yield t;
      }
    }
  })();
}

/** Intraday open times of one session's day: regular-hours bars and the extended-hours bars with trades. */
function intradayTimes(ticker: string, tf: Timeframe, s: Session, lastClosed: number, seed: number): number[] {
  const len = timeframeMs(tf);
  const key = canonicalSymbol(ticker);
  const out: number[] = [];
  for (let t = alignDown(s.extendedOpenMs, tf); t < s.extendedCloseMs && t <= lastClosed; t += len) {
    if (t < s.closeMs && t + len > s.openMs) {
      out.push(t);
      continue;
    }
    for (let m = Math.max(t, s.extendedOpenMs); m < Math.min(t + len, s.extendedCloseMs); m += MINUTE_MS) {
      if (unitFloat('polygon-extended', key, m, seed) < EXTENDED_MINUTE_SHARE) {
        out.push(t);
        break;
      }
    }
  }
  return out;
}

/** The values Polygon serves for the bar of `ticker` opening at `t` (one of polygonBarTimes), at `nowMs`. */
export function polygonBarValues(ticker: string, tf: Timeframe, t: number, nowMs: number, seed: number): PolygonBarValues {
  if (tf !== '1d') return { ...candleValuesAt('polygon', ticker, tf, t, seed), partial: false };
  const date = new Date(t + DAY_MS / 2).toISOString().slice(0, 10);
  const session = usEquitySession(date);
  if (!session || session.dayStartMs !== t) throw new RangeError(`${new Date(t).toISOString()} is not the open time of a US-equity session's day bar`);
  const final = { ...candleValuesAt('polygon', ticker, '1d', Date.parse(`${date}T00:00:00Z`), seed), openTime: t, closeTime: t + DAY_MS - 1 };
  if (nowMs >= session.extendedCloseMs) return { ...final, partial: false };
  if (nowMs >= session.closeMs) {
    // Regular trading is over (OHLC settled); after-hours trades add the last tenth of the volume.
    const share = 0.9 + (0.1 * (nowMs - session.closeMs)) / (session.extendedCloseMs - session.closeMs);
    return { ...final, volume: roundTo(final.volume * share, 4), partial: true };
  }
  // Regular trading: the close is the price now, the range and volume so far.
  const close = roundTo(priceAt('polygon', ticker, nowMs, seed), final.decimals);
  const share = Math.max(0.01, (0.9 * (nowMs - session.openMs)) / (session.closeMs - session.openMs));
  return {
    ...final,
    close,
    high: Math.max(final.open, close),
    low: Math.min(final.open, close),
    volume: roundTo(final.volume * share, 4),
    trades: Math.max(1, Math.floor(final.trades * share)),
    partial: true,
  };
}

/**
 * Exactly the final bars a complete collection of `ticker` holds for open times in `[fromMs, toMs)`
 * at `nowMs`: Polygon's bars (see polygonBarTimes) minus the scenario's holes, without the partial
 * day bar of a session still trading.
 */
export function polygonFinalBars(
  ticker: string,
  tf: Timeframe,
  fromMs: number,
  toMs: number,
  nowMs: number,
  seed: number,
  holes: Holes | undefined,
): PolygonBarValues[] {
  const out: PolygonBarValues[] = [];
  for (const t of polygonBarTimes(ticker, tf, fromMs, toMs - 1, nowMs, seed, 'asc')) {
    if (isHole('polygon', ticker, tf, t, seed, holes)) continue;
    const bar = polygonBarValues(ticker, tf, t, nowMs, seed);
    if (!bar.partial) out.push(bar);
  }
  return out;
}
