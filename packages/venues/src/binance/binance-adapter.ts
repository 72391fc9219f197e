import {
  alignDown,
  bookEnvelope,
  candleEnvelope,
  lastClosedOpenTime,
  MalformedPayloadError,
  systemClock,
  timeframeMs,
  type BookSnapshot,
  type Candle,
  type Clock,
  type Envelope,
  type Timeframe,
} from '@tickfleet/core';
import { intOption, normaliseBaseUrl } from '../internal/options.js';
import { parsePayload } from '../internal/parse-payload.js';
import type { BookSource, CandlePage, CandleSource, FetchOptions, Instrument, VenueAdapter, VenueAdapterOptions } from '../types.js';
import { VenueHttpClient } from '../venue-http-client.js';
import { BinanceDepth, BinanceExchangeInfo, BinanceKlines, isBinanceKlines } from './binance-schemas.js';
import { binanceSymbolBySuffix, binanceVenueSymbol } from './binance-symbols.js';
import { binanceWeights } from './binance-weights.js';

/** The defaults of {@link BinanceAdapterOptions}. */
export const BINANCE_DEFAULTS = Object.freeze({
  /** Binance's largest klines `limit`. */
  maxCandlesPerPage: 1000,
  /** Weight 5, the lightest depth request. */
  depthLimit: 100,
  /** Binance counts used weight per clock minute. */
  usedWeightWindowMs: 60_000,
});

export interface BinanceAdapterOptions extends VenueAdapterOptions {
  /** Candles per klines request (Binance allows 1..1000). @defaultValue BINANCE_DEFAULTS.maxCandlesPerPage */
  maxCandlesPerPage?: number;
  /** Levels per side in depth snapshots (5..5000); sets the depth weight. @defaultValue BINANCE_DEFAULTS.depthLimit */
  depthLimit?: number;
  /**
   * Window `X-MBX-USED-WEIGHT-1M` counts in; Binance counts per clock minute, emulations may use a
   * shorter window. Also where a 429's retry time is snapped to. @defaultValue BINANCE_DEFAULTS.usedWeightWindowMs
   */
  usedWeightWindowMs?: number;
}

/**
 * Binance spot market data: klines (closed candles only, paged by `startTime`), depth snapshots and
 * exchangeInfo symbol discovery. Every response's `X-MBX-USED-WEIGHT-1M` reaches the worker through
 * `afterResponse`; 429 becomes RateLimitedError at the window end, 418 becomes BannedError at the
 * `banned until <ms>` the body names.
 */
export class BinanceAdapter implements VenueAdapter, CandleSource, BookSource {
  readonly venue = 'binance';
  readonly weights: Readonly<Record<'klines' | 'depth' | 'exchangeInfo', number>>;
  readonly maxCandlesPerPage: number;
  readonly depthLimit: number;
  private readonly baseUrl: string;
  private readonly clock: Clock;
  private readonly http: VenueHttpClient;
  /** venue symbol -> tickfleet symbol, filled from exchangeInfo. */
  private readonly fromVenue = new Map<string, string>();

  constructor(options: BinanceAdapterOptions) {
    this.baseUrl = normaliseBaseUrl('baseUrl', options.baseUrl);
    this.clock = options.clock ?? systemClock;
    this.maxCandlesPerPage = intOption('maxCandlesPerPage', options.maxCandlesPerPage, BINANCE_DEFAULTS.maxCandlesPerPage, 1, 1000);
    this.depthLimit = intOption('depthLimit', options.depthLimit, BINANCE_DEFAULTS.depthLimit, 5, 5000);
    this.weights = binanceWeights(this.depthLimit);
    const windowMs = intOption('usedWeightWindowMs', options.usedWeightWindowMs, BINANCE_DEFAULTS.usedWeightWindowMs, 1, 86_400_000);
    this.http = new VenueHttpClient({
      venue: this.venue,
      ...(options.hooks ? { hooks: options.hooks } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      clock: this.clock,
      usedWeightHeader: 'x-mbx-used-weight-1m',
      usedWeightWindowMs: windowMs,
      errorPolicy: { rateLimitFallbackMs: windowMs, alignedWindowMs: windowMs },
    });
  }

  toVenueSymbol(symbol: string): string {
    return binanceVenueSymbol(symbol);
  }

  fromVenueSymbol(venueSymbol: string): string {
    return this.fromVenue.get(venueSymbol.toUpperCase()) ?? binanceSymbolBySuffix(venueSymbol);
  }

  /**
   * Pages `GET /api/v3/klines` from `fromMs`: `startTime` = cursor, `endTime` = min(toMs - 1, last
   * closed open time), next cursor = last openTime + interval. A page shorter than its `limit` means the
   * range is exhausted (Binance fills a page with the next existing candles, skipping venue holes).
   */
  async *fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options: FetchOptions = {}): AsyncIterable<CandlePage> {
    const lenMs = timeframeMs(timeframe);
    const venueSymbol = this.toVenueSymbol(symbol);
    let cursor = fromMs;
    while (cursor < toMs) {
      const endOpen = Math.min(toMs - 1, lastClosedOpenTime(this.clock.now(), timeframe));
      if (cursor > endOpen) return;
      const slots = Math.floor((endOpen - alignDown(cursor, timeframe)) / lenMs) + 1;
      const limit = Math.max(1, Math.min(this.maxCandlesPerPage, slots));
      const url = `${this.baseUrl}/api/v3/klines?${new URLSearchParams({
        symbol: venueSymbol,
        interval: timeframe,
        startTime: String(cursor),
        endTime: String(endOpen),
        limit: String(limit),
      }).toString()}`;
      const res = await this.http.get({ endpoint: 'klines', weight: this.weights.klines, url, signal: options.signal });
      const rows = parsePayload(this.venue, 'klines', res.body, BinanceKlines, isBinanceKlines);
      if (rows.length > limit) throw new MalformedPayloadError(this.venue, `klines returned ${rows.length} rows for limit ${limit}`, res.body.toString('utf8'));
      const nowMs = this.clock.now();
      const candles: Candle[] = [];
      let prevOpen = cursor - 1;
      for (const row of rows) {
        const [openTime, open, high, low, close, volume, closeTime, , trades] = row;
        // Out-of-range or unordered rows would make the cursor loop or skip data: refuse the page.
        if (openTime <= prevOpen || openTime > endOpen) {
          throw new MalformedPayloadError(this.venue, `klines row openTime ${openTime} outside (${prevOpen}, ${endOpen}] or not ascending`, row);
        }
        prevOpen = openTime;
        if (closeTime >= nowMs) continue; // still open: only closed candles are stored
        candles.push({ venue: this.venue, symbol, timeframe, openTime, open, high, low, close, volume, trades });
      }
      if (candles.length > 0) {
        yield { candles, envelopes: candles.map((c) => candleEnvelope(c, res.receivedAtMs, c.openTime + lenMs - 1)) };
      }
      const last = rows[rows.length - 1];
      if (!last || rows.length < limit) return;
      cursor = last[0] + lenMs;
    }
  }

  /** `GET /api/v3/exchangeInfo`: every TRADING symbol as BASE/QUOTE; also teaches `fromVenueSymbol`. */
  async listInstruments(options: FetchOptions = {}): Promise<Instrument[]> {
    const res = await this.http.get({
      endpoint: 'exchangeInfo',
      weight: this.weights.exchangeInfo,
      url: `${this.baseUrl}/api/v3/exchangeInfo`,
      signal: options.signal,
    });
    const info = parsePayload(this.venue, 'exchangeInfo', res.body, BinanceExchangeInfo);
    const out: Instrument[] = [];
    for (const s of info.symbols) {
      const symbol = `${s.baseAsset}/${s.quoteAsset}`;
      this.fromVenue.set(s.symbol.toUpperCase(), symbol);
      if (s.status !== 'TRADING') continue;
      out.push({ symbol, venueSymbol: s.symbol, meta: { status: s.status, baseAsset: s.baseAsset, quoteAsset: s.quoteAsset } });
    }
    return out;
  }

  /** `GET /api/v3/depth`: one snapshot; `lastUpdateId` is its sequence. */
  async fetchBook(symbol: string, options: FetchOptions = {}): Promise<{ book: BookSnapshot; envelope: Envelope }> {
    const venueSymbol = this.toVenueSymbol(symbol);
    const url = `${this.baseUrl}/api/v3/depth?${new URLSearchParams({ symbol: venueSymbol, limit: String(this.depthLimit) }).toString()}`;
    const res = await this.http.get({ endpoint: 'depth', weight: this.weights.depth, url, signal: options.signal });
    const depth = parsePayload(this.venue, 'depth', res.body, BinanceDepth);
    const book: BookSnapshot = {
      venue: this.venue,
      symbol,
      // Depth snapshots carry no timestamp; the moment the request was sent bounds it best.
      timeMs: res.sentAtMs,
      sequence: depth.lastUpdateId,
      bids: depth.bids,
      asks: depth.asks,
    };
    return { book, envelope: bookEnvelope(book, `binance:${venueSymbol}:depth:${depth.lastUpdateId}`, res.receivedAtMs, undefined) };
  }
}
