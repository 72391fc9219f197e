import { calendarFor, type Candle, type Timeframe } from '@tickfleet/core';
import { gridCandles, toCandle, type ExpectedCandlesOptions } from './data/candles.js';
import { alpacaBarTimes, alpacaBarValues } from './venues/alpaca-emulation.js';
import { polygonFinalBars } from './venues/polygon-emulation-bars.js';

/**
 * Exactly what a complete collection of `symbol` on `venue` holds for open times in `[fromMs, toMs)`
 * (half-open): every final candle the venue serves there, minus the scenario's holes, ascending by
 * open time. 24/7 venues serve every closed candle of the UTC grid. The US-equity venues serve bars
 * only in sessions, day bars keyed by the session day at New York midnight: Polygon (see
 * polygon-emulation-bars.ts) and Alpaca (`1d` and `1m`, see alpacaBarTimes; a bar is final as the
 * calendar's `finalBefore` says, the day bar once its after-hours trading is over).
 */
export function expectedCandles(
  venue: string,
  symbol: string,
  timeframe: Timeframe,
  fromMs: number,
  toMs: number,
  seed: number,
  options: ExpectedCandlesOptions = {},
): Candle[] {
  const nowMs = options.nowMs ?? Date.now();
  if (venue === 'polygon')
    return polygonFinalBars(symbol, timeframe, fromMs, toMs, nowMs, seed, options.holes).map((v) => toCandle(venue, symbol, timeframe, v));
  if (venue !== 'alpaca') return gridCandles(venue, symbol, timeframe, fromMs, toMs, seed, options);
  if (timeframe !== '1d' && timeframe !== '1m') throw new RangeError(`the Alpaca emulation serves 1d and 1m bars, not ${timeframe}`);
  const finalBefore = calendarFor(venue).finalBefore(timeframe, nowMs);
  return alpacaBarTimes(symbol, timeframe, fromMs, Math.min(toMs, finalBefore), nowMs, seed, options.holes).map((t) =>
    toCandle(venue, symbol, timeframe, alpacaBarValues(symbol, timeframe, t, seed)),
  );
}
