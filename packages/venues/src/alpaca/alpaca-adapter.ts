import { calendarFor, candleEnvelope, MalformedPayloadError, ValidationError, type Candle, type Timeframe } from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption } from '../internal/options.js';
import { decimalString } from '../internal/parse-payload.js';
import type { CandlePage, CandleSource, FetchOptions, MultiSymbolCandleSource, VenueAdapterOptions } from '../types.js';
import { alignedWindowPolicy, type ResponseHeaders } from '../venue-http-client.js';
import { AlpacaMultiBars } from './alpaca-schemas.js';

export const ALPACA_FEEDS = ['sip', 'iex'] as const;
export type AlpacaFeed = (typeof ALPACA_FEEDS)[number];
export const ALPACA_ADJUSTMENTS = ['raw', 'split', 'dividend', 'all'] as const;
export type AlpacaAdjustment = (typeof ALPACA_ADJUSTMENTS)[number];

/** Most symbols tickfleet names in one bars request (Alpaca documents no hard cap; the design batches by 100). */
export const ALPACA_MAX_SYMBOLS_PER_REQUEST = 100;
/** Alpaca's largest `limit`: bars per page over all symbols of the request. */
export const ALPACA_MAX_LIMIT = 10_000;

/** The defaults of {@link AlpacaAdapterOptions}. */
export const ALPACA_DEFAULTS = Object.freeze({
  alpacaFeed: 'sip' as AlpacaFeed,
  alpacaAdjustment: 'raw' as AlpacaAdjustment,
  maxCandlesPerPage: ALPACA_MAX_LIMIT,
  maxSymbolsPerRequest: ALPACA_MAX_SYMBOLS_PER_REQUEST,
  /** Alpaca counts 200 requests per minute. */
  rateLimitWindowMs: 60_000,
});

export interface AlpacaAdapterOptions extends VenueAdapterOptions {
  /** `APCA-API-KEY-ID` (the worker passes its ALPACA_API_KEY_ID); required before the first request. */
  alpacaKeyId?: string;
  /** `APCA-API-SECRET-KEY` (the worker passes its ALPACA_API_SECRET_KEY). */
  alpacaSecretKey?: string;
  /** `feed`: `sip` (all US exchanges; a Basic plan may not ask for its last 15 minutes) or `iex`. @defaultValue ALPACA_DEFAULTS.alpacaFeed */
  alpacaFeed?: AlpacaFeed;
  /** `adjustment` of prices and volumes for corporate actions. @defaultValue ALPACA_DEFAULTS.alpacaAdjustment */
  alpacaAdjustment?: AlpacaAdjustment;
  /** `limit` per request: bars per page over all symbols (1..10000). @defaultValue ALPACA_DEFAULTS.maxCandlesPerPage */
  maxCandlesPerPage?: number;
  /** Symbols per request (1..100). @defaultValue ALPACA_DEFAULTS.maxSymbolsPerRequest */
  maxSymbolsPerRequest?: number;
  /**
   * Length of Alpaca's request window (200 requests per minute): a 429 is retried at the end of the
   * clock-aligned window, which is the `X-RateLimit-Reset` Alpaca sends. @defaultValue ALPACA_DEFAULTS.rateLimitWindowMs
   */
  rateLimitWindowMs?: number;
}

/** How recent SIP data a Basic-plan key may not ask for. */
const RECENT_SIP_MS = 15 * 60_000;

/** tickfleet timeframe -> Alpaca `timeframe`. Only the two the fleet collects (day and minute bars). */
const TIMEFRAMES: Partial<Record<Timeframe, string>> = { '1m': '1Min', '1d': '1Day' };

/**
 * Alpaca Market Data v2 stock bars: `GET /v2/stocks/bars` for up to 100 symbols per request, paged by
 * `page_token`/`next_page_token`, authenticated by the `APCA-API-KEY-ID` and `APCA-API-SECRET-KEY`
 * headers (sent only to the configured base URL, never put in a URL, an error or a log). Every
 * request weighs 1 against Alpaca's per-minute request limit; each answer's
 * `X-RateLimit-Limit/Remaining/Reset` reaches the worker's budget as the used count of the window
 * ending at the reset. Bars are stored only when final: minute bars once closed, day bars once the
 * session (US-equity calendar) has closed, since Alpaca serves today's day bar while it still changes.
 */
export class AlpacaAdapter extends HttpVenueAdapter<'bars', 'keyId' | 'secretKey'> implements CandleSource, MultiSymbolCandleSource {
  readonly maxCandlesPerPage: number;
  readonly maxSymbolsPerRequest: number;
  private readonly feed: AlpacaFeed;
  private readonly adjustment: AlpacaAdjustment;

  constructor(options: AlpacaAdapterOptions) {
    const windowMs = durationOption('rateLimitWindowMs', options.rateLimitWindowMs, ALPACA_DEFAULTS.rateLimitWindowMs);
    super(options, {
      venue: 'alpaca',
      weights: { bars: 1 },
      limits: { readUsage: (headers) => alpacaUsage(headers, windowMs), errorPolicy: alignedWindowPolicy(windowMs) },
      credentials: {
        keyId: { value: options.alpacaKeyId, option: 'alpacaKeyId', env: 'ALPACA_API_KEY_ID', what: 'an Alpaca API key id' },
        secretKey: { value: options.alpacaSecretKey, option: 'alpacaSecretKey', env: 'ALPACA_API_SECRET_KEY', what: 'an Alpaca API secret key' },
      },
    });
    this.feed = oneOf('alpacaFeed', options.alpacaFeed, ALPACA_FEEDS, ALPACA_DEFAULTS.alpacaFeed);
    this.adjustment = oneOf('alpacaAdjustment', options.alpacaAdjustment, ALPACA_ADJUSTMENTS, ALPACA_DEFAULTS.alpacaAdjustment);
    this.maxCandlesPerPage = intOption('maxCandlesPerPage', options.maxCandlesPerPage, ALPACA_DEFAULTS.maxCandlesPerPage, 1, ALPACA_MAX_LIMIT);
    this.maxSymbolsPerRequest = intOption(
      'maxSymbolsPerRequest',
      options.maxSymbolsPerRequest,
      ALPACA_DEFAULTS.maxSymbolsPerRequest,
      1,
      ALPACA_MAX_SYMBOLS_PER_REQUEST,
    );
  }

  /** Alpaca's tickers are upper case (`BRK.B`). */
  override toVenueSymbol(symbol: string): string {
    return symbol.toUpperCase();
  }

  fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options: FetchOptions = {}): AsyncIterable<CandlePage> {
    return this.fetchCandlesOfSymbols([symbol], timeframe, fromMs, toMs, options);
  }

  /**
   * Final bars of `symbols` with `fromMs <= t < toMs`: one request per page (`start` = fromMs, `end` =
   * toMs - 1 ms, both inclusive at Alpaca, `sort=asc`), following `next_page_token` until it is null.
   * On the SIP feed the end stops 15 minutes before now (what the Basic plan allows); the per-day
   * units ask only for days final by then.
   * Each page is yielded as it arrives, so a unit persists it before asking for the next.
   */
  async *fetchCandlesOfSymbols(
    symbols: readonly string[],
    timeframe: Timeframe,
    fromMs: number,
    toMs: number,
    options: FetchOptions = {},
  ): AsyncIterable<CandlePage> {
    const headers = { 'APCA-API-KEY-ID': this.credential('keyId'), 'APCA-API-SECRET-KEY': this.credential('secretKey') };
    const alpacaTf = TIMEFRAMES[timeframe];
    if (!alpacaTf) throw new ValidationError('timeframe', `a timeframe Alpaca bars are collected in (${Object.keys(TIMEFRAMES).join(', ')})`, timeframe);
    if (symbols.length === 0) return;
    if (symbols.length > this.maxSymbolsPerRequest) {
      throw new ValidationError('symbols', `at most ${this.maxSymbolsPerRequest} symbols per Alpaca bars request`, `${symbols.length} symbols`);
    }
    // A Basic-plan key may not ask the SIP feed for its last 15 minutes (403): the request ends before them.
    const endMs = this.feed === 'sip' ? Math.min(toMs - 1, this.clock.now() - RECENT_SIP_MS - 1) : toMs - 1;
    if (fromMs > endMs) return;
    const venueSymbols = new Map(symbols.map((s) => [this.toVenueSymbol(s), s]));
    const calendar = calendarFor(this.venue);
    const query = new URLSearchParams({
      symbols: [...venueSymbols.keys()].join(','),
      timeframe: alpacaTf,
      start: new Date(fromMs).toISOString(),
      end: new Date(endMs).toISOString(),
      limit: String(this.maxCandlesPerPage),
      adjustment: this.adjustment,
      feed: this.feed,
      sort: 'asc',
    });
    const seenTokens = new Set<string>();
    const lastT = new Map<string, number>();
    for (;;) {
      const { data: page, res } = await this.getJson('bars', this.url('/v2/stocks/bars', query), AlpacaMultiBars, { headers, signal: options.signal });
      const finalBefore = calendar.finalBefore(timeframe, this.clock.now());
      const candles: Candle[] = [];
      let count = 0;
      for (const [venueSymbol, bars] of Object.entries(page.bars ?? {})) {
        const symbol = venueSymbols.get(venueSymbol);
        if (symbol === undefined) throw new MalformedPayloadError(this.venue, `bars answered symbol ${venueSymbol}, which was not asked for`, venueSymbol);
        count += bars.length;
        for (const bar of bars) {
          const t = parseBarTime(bar.t);
          if (t === undefined) throw new MalformedPayloadError(this.venue, `bar time ${bar.t} is not a valid time`, bar);
          // sort=asc per symbol: a bar at or before the symbol's last one repeats across a page boundary.
          if (t <= (lastT.get(symbol) ?? Number.NEGATIVE_INFINITY)) continue;
          lastT.set(symbol, t);
          if (t < fromMs || t >= toMs || t >= finalBefore) continue;
          candles.push({
            venue: this.venue,
            symbol,
            timeframe,
            openTime: t,
            open: decimalString(bar.o),
            high: decimalString(bar.h),
            low: decimalString(bar.l),
            close: decimalString(bar.c),
            volume: decimalString(bar.v),
            trades: bar.n,
          });
        }
      }
      if (count > this.maxCandlesPerPage) throw new MalformedPayloadError(this.venue, `bars returned ${count} bars for limit ${this.maxCandlesPerPage}`, count);
      if (candles.length > 0) yield { candles, envelopes: candles.map((c) => candleEnvelope(c, res.receivedAtMs)) };
      const token = page.next_page_token;
      if (token === null || token === '') return;
      if (seenTokens.has(token)) throw new MalformedPayloadError(this.venue, 'next_page_token repeats a page already fetched', token);
      seenTokens.add(token);
      query.set('page_token', token);
    }
  }
}

/**
 * Alpaca's usage headers as the budget's observation: used = `X-RateLimit-Limit` -
 * `X-RateLimit-Remaining`, counted in the window that ends at `X-RateLimit-Reset` (epoch seconds).
 * Absent or garbled headers report nothing (the fleet's own count stands).
 */
export function alpacaUsage(headers: ResponseHeaders, windowMs: number): { usedWeight: number; windowStartMs: number } | undefined {
  const limit = Number(headers.get('x-ratelimit-limit') ?? Number.NaN);
  const remaining = Number(headers.get('x-ratelimit-remaining') ?? Number.NaN);
  const reset = Number(headers.get('x-ratelimit-reset') ?? Number.NaN);
  if (!Number.isSafeInteger(limit) || !Number.isSafeInteger(remaining) || !Number.isSafeInteger(reset) || remaining < 0 || remaining > limit || reset <= 0) {
    return undefined;
  }
  // The reset is whole seconds at (or just after) the window end: the window is the one holding the instant before it.
  const windowStartMs = Math.floor((reset * 1000 - 1) / windowMs) * windowMs;
  return { usedWeight: limit - remaining, windowStartMs };
}

/** Epoch ms of an RFC-3339 UTC time with up to nine fractional digits (Date.parse takes three). */
function parseBarTime(text: string): number | undefined {
  const seconds = Date.parse(`${text.slice(0, 19)}Z`);
  if (!Number.isFinite(seconds)) return undefined;
  const fraction = /\.(\d+)Z$/.exec(text)?.[1];
  return seconds + (fraction ? Math.floor(Number(`0.${fraction}`) * 1000) : 0);
}

function oneOf<T extends string>(name: string, value: T | undefined, allowed: readonly T[], defaultValue: T): T {
  if (value === undefined) return defaultValue;
  if (!allowed.includes(value)) throw new ValidationError(name, `one of ${allowed.join(', ')}`, value);
  return value;
}
