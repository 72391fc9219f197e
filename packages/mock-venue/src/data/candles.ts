import { alignDown, lastClosedOpenTime, timeframeMs, ValidationError, type Candle, type Timeframe } from '@tickfleet/core';
import type { Holes } from '../scenario.js';
import { krakenPairOfKey } from './kraken-pairs.js';
import { absorb, HASH_START, roundTo, unitFloat, unitFloatOf } from './random.js';

const DAY_MS = 86_400_000;

/**
 * The key a symbol's data hangs off: `BTC/USDT` and `BTCUSDT` are the same instrument, so the
 * tickfleet form and the venue form of a symbol produce identical data.
 */
export function canonicalSymbol(symbol: string): string {
  return symbol.replace(/\//g, '').toUpperCase();
}

// Module bindings, not globals: this runs for every candle, also inside jest's vm context where
// each global lookup goes through the context's interceptor.
const { exp, max, min, sin, sqrt, floor, PI } = Math;

/** Decimal places of an instrument's prices: large prices get cents, small ones more places. */
export function priceDecimals(venue: string, symbol: string, seed: number): number {
  return priceSeries(venue, symbol, seed).decimals;
}

function basePrice(venue: string, key: string, seed: number): number {
  return 10 ** (0.5 + 4 * unitFloat('base', venue, key, seed));
}

/**
 * What one instrument's prices hang off, computed once for a run of calls on it (a page of candles
 * asks for the same instrument a thousand times): its base price and phase, and the hash state of
 * its per-instant jitter after the parts every instant shares.
 */
interface PriceSeries {
  venue: string;
  symbol: string;
  seed: number;
  key: string;
  base: number;
  phase: number;
  decimals: number;
  jitter: number;
}

let lastPrice: PriceSeries | undefined;

function priceSeries(venue: string, symbol: string, seed: number): PriceSeries {
  const last = lastPrice;
  if (last !== undefined && last.venue === venue && last.symbol === symbol && last.seed === seed) return last;
  const key = canonicalSymbol(symbol);
  // Kraken pairs print their published pair_decimals, at a price level that suits them.
  const kraken = venue === 'kraken' ? krakenPairOfKey(key) : undefined;
  const base = kraken ? kraken.basePrice * (0.8 + 0.4 * unitFloat('base', venue, key, seed)) : basePrice(venue, key, seed);
  lastPrice = {
    venue,
    symbol,
    seed,
    key,
    base,
    phase: 2 * PI * unitFloat('phase', venue, key, seed),
    decimals: kraken ? kraken.pairDecimals : base >= 1000 ? 2 : base >= 10 ? 3 : 5,
    jitter: absorb(HASH_START, 'jitter', venue, key, seed),
  };
  return lastPrice;
}

function priceOf(s: PriceSeries, tMs: number): number {
  const trend = 0.04 * sin((2 * PI * tMs) / (5 * DAY_MS) + s.phase) + 0.01 * sin((2 * PI * tMs) / 3_600_000 + 2 * s.phase);
  const jitter = 0.002 * (unitFloatOf(absorb(s.jitter, tMs)) - 0.5);
  return s.base * exp(trend + jitter);
}

/**
 * The instrument's price at instant `tMs`: slow waves (5-day and 1-hour periods) plus a per-instant
 * jitter. Because a candle's close is the price at its close instant, which is the next candle's
 * open instant, consecutive candles join without jumps.
 */
export function priceAt(venue: string, symbol: string, tMs: number, seed: number): number {
  return priceOf(priceSeries(venue, symbol, seed), tMs);
}

/** Numeric values of one candle, before a venue formats them. */
export interface CandleValues {
  openTime: number;
  closeTime: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  /** Volume-weighted average price (between low and high). */
  vwap: number;
  trades: number;
  /** Base volume bought by takers (Binance's takerBuyBaseVolume). */
  takerBuyVolume: number;
  decimals: number;
}

/** One instrument's candles of one timeframe: the hash states of their parts shared by every open time. */
interface CandleSeries {
  price: PriceSeries;
  timeframe: Timeframe;
  lenMs: number;
  hi: number;
  lo: number;
  notional: number;
  vwap: number;
  trades: number;
  taker: number;
  hole: number;
}

let lastCandles: CandleSeries | undefined;

function candleSeries(venue: string, symbol: string, timeframe: Timeframe, seed: number): CandleSeries {
  const price = priceSeries(venue, symbol, seed);
  const last = lastCandles;
  if (last !== undefined && last.price === price && last.timeframe === timeframe) return last;
  const prefix = (tag: string): number => absorb(HASH_START, tag, venue, price.key, timeframe);
  lastCandles = {
    price,
    timeframe,
    lenMs: timeframeMs(timeframe),
    hi: prefix('hi'),
    lo: prefix('lo'),
    notional: prefix('notional'),
    vwap: prefix('vwap'),
    trades: prefix('trades'),
    taker: prefix('taker'),
    hole: prefix('hole'),
  };
  return lastCandles;
}

/** The numeric candle of `symbol` opening at `openTimeMs` (must be aligned to `timeframe`). */
export function candleValuesAt(venue: string, symbol: string, timeframe: Timeframe, openTimeMs: number, seed: number): CandleValues {
  if (alignDown(openTimeMs, timeframe) !== openTimeMs) {
    throw new ValidationError('openTimeMs', `an open time aligned to ${timeframe}`, openTimeMs);
  }
  const c = candleSeries(venue, symbol, timeframe, seed);
  const { lenMs } = c;
  const decimals = c.price.decimals;
  // Each value hashes (tag, venue, symbol, timeframe, openTimeMs, seed): the series holds the
  // state after the first four.
  const u = (state: number): number => unitFloatOf(absorb(state, openTimeMs, seed));
  const open = roundTo(priceOf(c.price, openTimeMs), decimals);
  const close = roundTo(priceOf(c.price, openTimeMs + lenMs), decimals);
  const span = max(open, close) * 0.002;
  const high = roundTo(max(open, close) + span * u(c.hi), decimals);
  const low = roundTo(min(open, close) - span * u(c.lo), decimals);
  const minutes = lenMs / 60_000;
  const notional = 10 ** (4 + 2 * u(c.notional)) * sqrt(minutes);
  const volume = max(0.0001, roundTo(notional / open, 4));
  const vwap = roundTo(low + (high - low) * u(c.vwap), decimals + 2);
  const trades = 1 + floor(u(c.trades) * 500 * sqrt(minutes));
  const takerBuyVolume = roundTo(volume * u(c.taker), 4);
  return { openTime: openTimeMs, closeTime: openTimeMs + lenMs - 1, open, high, low, close, volume, vwap, trades, takerBuyVolume, decimals };
}

/**
 * How a venue prints a decimal: Binance sends fixed 8-place strings (`"42000.10000000"`); the
 * JSON-number venues (Polygon) send numbers, which an adapter turns into strings with `String(n)`.
 */
export function formatDecimal(venue: string, value: number): string {
  return venue === 'binance' ? value.toFixed(8) : String(value);
}

/**
 * The closed candle of `symbol` on `venue` opening at `openTimeMs`, as a complete collection stores it:
 * prices and volume formatted as the venue sends them (see formatDecimal), `symbol` as given.
 * Holes are not applied here; see gridCandles and isHole.
 */
export function candleAt(venue: string, symbol: string, timeframe: Timeframe, openTimeMs: number, seed: number): Candle {
  return toCandle(venue, symbol, timeframe, candleValuesAt(venue, symbol, timeframe, openTimeMs, seed));
}

/** Candle values as the venue sends them (see formatDecimal): the record a sink holds for them. */
export function toCandle(venue: string, symbol: string, timeframe: Timeframe, v: CandleValues): Candle {
  if (venue === 'kraken') {
    // Kraken's OHLC strings: prices at the pair's decimals, volume at 8 (as kraken-emulation.ts sends them).
    const price = (x: number): string => x.toFixed(v.decimals);
    return {
      venue,
      symbol,
      timeframe,
      openTime: v.openTime,
      open: price(v.open),
      high: price(v.high),
      low: price(v.low),
      close: price(v.close),
      volume: v.volume.toFixed(8),
      trades: v.trades,
    };
  }
  return {
    venue,
    symbol,
    timeframe,
    openTime: v.openTime,
    open: formatDecimal(venue, v.open),
    high: formatDecimal(venue, v.high),
    low: formatDecimal(venue, v.low),
    close: formatDecimal(venue, v.close),
    volume: formatDecimal(venue, v.volume),
    trades: v.trades,
  };
}

/** True when the scenario's holes remove this candle from the venue's own data. */
export function isHole(venue: string, symbol: string, timeframe: Timeframe, openTimeMs: number, seed: number, holes: Holes | undefined): boolean {
  if (!holes) return false;
  const series = candleSeries(venue, symbol, timeframe, seed);
  for (const r of holes.ranges ?? []) {
    if (openTimeMs < r.fromMs || openTimeMs >= r.toMs) continue;
    if (r.symbol !== undefined && canonicalSymbol(r.symbol) !== series.price.key) continue;
    if (r.timeframe !== undefined && r.timeframe !== timeframe) continue;
    return true;
  }
  const rate = holes.rate ?? 0;
  // hash('hole', venue, symbol, timeframe, openTimeMs, seed), the series holding the first four
  return rate > 0 && unitFloatOf(absorb(series.hole, openTimeMs, seed)) < rate;
}

export interface ExpectedCandlesOptions {
  /** The scenario's holes for this venue; removed candles are not expected. */
  holes?: Holes;
  /**
   * Wall-clock instant the collection ran up to; only candles closed by then exist.
   * @defaultValue Date.now()
   */
  nowMs?: number;
}

/**
 * Exactly what a complete collection of `symbol` on a 24/7 venue holds for open times in `[fromMs, toMs)`
 * (half-open): every closed candle of the UTC grid, minus the scenario's holes, ascending by open
 * time. Venues with trading sessions: see expectedCandles.
 */
export function gridCandles(
  venue: string,
  symbol: string,
  timeframe: Timeframe,
  fromMs: number,
  toMs: number,
  seed: number,
  options: ExpectedCandlesOptions = {},
): Candle[] {
  const out: Candle[] = [];
  const lenMs = timeframeMs(timeframe);
  const last = lastClosedOpenTime(options.nowMs ?? Date.now(), timeframe);
  let t = alignDown(fromMs, timeframe);
  if (t < fromMs) t += lenMs;
  for (; t < toMs && t <= last; t += lenMs) {
    if (!isHole(venue, symbol, timeframe, t, seed, options.holes)) out.push(candleAt(venue, symbol, timeframe, t, seed));
  }
  return out;
}
