import type { Candle, Timeframe } from '@tickfleet/core';
import { gridCandles, toCandle, type ExpectedCandlesOptions } from './data/candles.js';
import { polygonFinalBars } from './venues/polygon-emulation-bars.js';

/**
 * Exactly what a complete collection of `symbol` on `venue` holds for open times in `[fromMs, toMs)`
 * (half-open): every final candle the venue serves there, minus the scenario's holes, ascending by
 * open time. 24/7 venues serve every closed candle of the UTC grid; Polygon serves bars only in
 * US-equity sessions, day bars at New York midnight (see polygon-emulation-bars.ts).
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
  if (venue !== 'polygon') return gridCandles(venue, symbol, timeframe, fromMs, toMs, seed, options);
  return polygonFinalBars(symbol, timeframe, fromMs, toMs, options.nowMs ?? Date.now(), seed, options.holes).map((v) => toCandle(venue, symbol, timeframe, v));
}
