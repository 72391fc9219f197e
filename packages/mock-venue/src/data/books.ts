import type { BookLevel, BookSnapshot } from '@tickfleet/core';
import { canonicalSymbol, formatDecimal, priceAt, priceDecimals } from './candles.js';
import { roundTo, unitFloat } from './random.js';

/** Levels per side when the caller does not ask for a depth. */
export const DEFAULT_BOOK_DEPTH = 100;
/** Polymarket books are thin: at most this many levels per side (prices live on a 0.01 grid in 0.01..0.99). */
export const POLYMARKET_MAX_LEVELS = 20;

/**
 * The order book of `symbol` on `venue` at `timeMs`: a pure function of the second containing `timeMs`
 * (`sequence` is that second, `floor(timeMs / 1000)`; Binance's `lastUpdateId` is an update counter derived from it), levels best
 * first. Binance books sit around the instrument's candle price; Polymarket and Limitless books are
 * probability books on a 0.01 grid. `depth` caps the levels per side.
 */
export function bookAt(venue: string, symbol: string, timeMs: number, seed: number, depth = DEFAULT_BOOK_DEPTH): BookSnapshot {
  const second = Math.floor(timeMs / 1000);
  const levels =
    venue === 'polymarket' || venue === 'limitless' ? probabilityLevels(symbol, second, seed, depth) : priceLevels(venue, symbol, second, seed, depth);
  return { venue, symbol, timeMs, sequence: second, ...levels };
}

function priceLevels(venue: string, symbol: string, second: number, seed: number, depth: number): { bids: BookLevel[]; asks: BookLevel[] } {
  const key = canonicalSymbol(symbol);
  const decimals = priceDecimals(venue, key, seed);
  const scale = 10 ** decimals;
  const midTicks = Math.round(priceAt(venue, key, second * 1000, seed) * scale);
  const bids: BookLevel[] = [];
  const asks: BookLevel[] = [];
  let bidTicks = midTicks - 1 - Math.floor(unitFloat('spread-b', venue, key, second, seed) * 2);
  let askTicks = midTicks + 1 + Math.floor(unitFloat('spread-a', venue, key, second, seed) * 2);
  // qty in base units worth roughly 100..100k quote, so books of cheap and dear coins look alike
  const qtyScale = 1e5 / (midTicks / scale);
  for (let i = 0; i < depth && bidTicks > 0; i++) {
    const qty = Math.max(0.00001, roundTo(qtyScale * 10 ** (-3 * unitFloat('bq', venue, key, second, seed, i)), 5));
    bids.push([formatDecimal(venue, bidTicks / scale), formatDecimal(venue, qty)]);
    bidTicks -= 1 + Math.floor(unitFloat('bg', venue, key, second, seed, i) * 3);
  }
  for (let i = 0; i < depth; i++) {
    const qty = Math.max(0.00001, roundTo(qtyScale * 10 ** (-3 * unitFloat('aq', venue, key, second, seed, i)), 5));
    asks.push([formatDecimal(venue, askTicks / scale), formatDecimal(venue, qty)]);
    askTicks += 1 + Math.floor(unitFloat('ag', venue, key, second, seed, i) * 3);
  }
  return { bids, asks };
}

function probabilityLevels(token: string, second: number, seed: number, depth: number): { bids: BookLevel[]; asks: BookLevel[] } {
  const phase = 2 * Math.PI * unitFloat('pm-phase', token, seed);
  const wave = 50 + 40 * Math.sin((2 * Math.PI * second) / 21_600 + phase);
  const midCents = Math.min(97, Math.max(3, Math.round(wave + 3 * (unitFloat('pm-mid', token, second, seed) - 0.5))));
  const maxLevels = Math.min(depth, POLYMARKET_MAX_LEVELS);
  const bids: BookLevel[] = [];
  const asks: BookLevel[] = [];
  let bid = midCents - 1 - Math.floor(unitFloat('pm-sb', token, second, seed) * 2);
  let ask = midCents + 1 + Math.floor(unitFloat('pm-sa', token, second, seed) * 2);
  for (let i = 0; i < maxLevels && bid >= 1; i++) {
    bids.push([String(bid / 100), String(roundTo(5 + 2000 * unitFloat('pm-bq', token, second, seed, i), 2))]);
    bid -= 1 + Math.floor(unitFloat('pm-bg', token, second, seed, i) * 2);
  }
  for (let i = 0; i < maxLevels && ask <= 99; i++) {
    asks.push([String(ask / 100), String(roundTo(5 + 2000 * unitFloat('pm-aq', token, second, seed, i), 2))]);
    ask += 1 + Math.floor(unitFloat('pm-ag', token, second, seed, i) * 2);
  }
  return { bids, asks };
}
