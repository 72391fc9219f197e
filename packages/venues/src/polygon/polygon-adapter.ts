import {
  calendarFor,
  candleEnvelope,
  ConfigError,
  MalformedPayloadError,
  systemClock,
  timeframeMs,
  ValidationError,
  type Candle,
  type Clock,
  type Timeframe,
} from '@tickfleet/core';
import { intOption, normaliseBaseUrl } from '../internal/options.js';
import { decimalString, parsePayload } from '../internal/parse-payload.js';
import type { CandlePage, CandleSource, FetchOptions, VenueAdapter, VenueAdapterOptions } from '../types.js';
import { VenueHttpClient, type HttpRequest, type HttpResponse } from '../venue-http-client.js';
import { VenueRejectedError } from '../venue-rejected-error.js';
import { PolygonAuthError } from './polygon-auth-error.js';
import { PolygonPlanError } from './polygon-plan-error.js';
import { PolygonAggs } from './polygon-schemas.js';

/** The defaults of {@link PolygonAdapterOptions}. */
export const POLYGON_DEFAULTS = Object.freeze({
  maxCandlesPerPage: 5000,
  /** Polygon's free tier allows 5 requests per minute. */
  rateLimitWindowMs: 60_000,
});

export interface PolygonAdapterOptions extends VenueAdapterOptions {
  /** API key (the worker passes its POLYGON_API_KEY); required before the first request. */
  apiKey?: string;
  /** `limit` per aggregates request (Polygon allows up to 50000). @defaultValue POLYGON_DEFAULTS.maxCandlesPerPage */
  maxCandlesPerPage?: number;
  /**
   * Length of the vendor's request window: a 429 carries no Retry-After, so the adapter retries one
   * full window later. The free tier allows 5 requests per minute. @defaultValue POLYGON_DEFAULTS.rateLimitWindowMs
   */
  rateLimitWindowMs?: number;
}

/**
 * tickfleet timeframe -> Polygon `{multiplier}/{timespan}`. No `1w`: Polygon's weeks begin on Sunday
 * in New York, tickfleet's on Monday UTC, so no week bar of Polygon lands on tickfleet's grid.
 */
const RANGES: Partial<Record<Timeframe, [number, 'minute' | 'hour' | 'day']>> = {
  '1m': [1, 'minute'],
  '3m': [3, 'minute'],
  '5m': [5, 'minute'],
  '15m': [15, 'minute'],
  '30m': [30, 'minute'],
  '1h': [1, 'hour'],
  '2h': [2, 'hour'],
  '4h': [4, 'hour'],
  '6h': [6, 'hour'],
  '8h': [8, 'hour'],
  '12h': [12, 'hour'],
  '1d': [1, 'day'],
};

/** US stocks trade in sessions; day bars are stored on the New York grid Polygon stamps them on. */
const CALENDAR = calendarFor('polygon');

/**
 * Polygon aggregates (bars), paged by following `next_url`. Each request weighs 1 against a
 * vendor quota that is per request (5 per minute on the free tier).
 *
 * Bars exist only in US-equity sessions (see @tickfleet/core calendar.ts). Day bars open at New York
 * midnight (05:00Z / 04:00Z), off tickfleet's UTC day grid, and are stored as Polygon stamps them.
 * A day bar is kept only once the calendar says its session is over (`finalBefore`): Polygon serves
 * today's bar while it still trades, and storing it then would keep a half day as final. Intraday
 * bars are kept once closed.
 */
export class PolygonAdapter implements VenueAdapter, CandleSource {
  readonly venue = 'polygon';
  readonly weights: Readonly<Record<'aggs', number>> = Object.freeze({ aggs: 1 });
  readonly maxCandlesPerPage: number;
  private readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly clock: Clock;
  private readonly http: VenueHttpClient;

  constructor(options: PolygonAdapterOptions) {
    this.baseUrl = normaliseBaseUrl('baseUrl', options.baseUrl);
    this.apiKey = options.apiKey;
    this.clock = options.clock ?? systemClock;
    this.maxCandlesPerPage = intOption('maxCandlesPerPage', options.maxCandlesPerPage, POLYGON_DEFAULTS.maxCandlesPerPage, 1, 50_000);
    const windowMs = intOption('rateLimitWindowMs', options.rateLimitWindowMs, POLYGON_DEFAULTS.rateLimitWindowMs, 1, 86_400_000);
    this.http = new VenueHttpClient({
      venue: this.venue,
      ...(options.hooks ? { hooks: options.hooks } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      clock: this.clock,
      errorPolicy: { rateLimitFallbackMs: windowMs },
    });
  }

  toVenueSymbol(symbol: string): string {
    return symbol;
  }

  fromVenueSymbol(venueSymbol: string): string {
    return venueSymbol;
  }

  /**
   * Closed bars with `fromMs <= t < toMs`, one page per request. Timestamps are sent as epoch ms (both
   * ends inclusive at Polygon, hence `toMs - 1`); `next_url` is followed with the key re-attached, and
   * only on the base URL's own origin so the key never leaves for another host.
   */
  async *fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options: FetchOptions = {}): AsyncIterable<CandlePage> {
    if (!this.apiKey) throw new ConfigError('POLYGON_API_KEY', 'a Polygon API key (the adapter option apiKey, which the worker takes from POLYGON_API_KEY)');
    if (fromMs >= toMs) return;
    const range = RANGES[timeframe];
    if (!range) throw new ValidationError('timeframe', `a Polygon timeframe (${Object.keys(RANGES).join(' ')})`, timeframe);
    const [multiplier, timespan] = range;
    const lenMs = timeframeMs(timeframe);
    const ticker = encodeURIComponent(this.toVenueSymbol(symbol));
    const query = new URLSearchParams({ adjusted: 'true', sort: 'asc', limit: String(this.maxCandlesPerPage), apiKey: this.apiKey });
    let url: string | undefined = `${this.baseUrl}/v2/aggs/ticker/${ticker}/range/${multiplier}/${timespan}/${fromMs}/${toMs - 1}?${query.toString()}`;
    const seen = new Set<string>();
    let lastT = Number.NEGATIVE_INFINITY;
    while (url !== undefined) {
      seen.add(url);
      const res = await this.get({ endpoint: 'aggs', weight: this.weights.aggs, url, signal: options.signal }, fromMs, toMs);
      const page = parsePayload(this.venue, 'aggs', res.body, PolygonAggs);
      const nowMs = this.clock.now();
      const finalBefore = timeframe === '1d' ? CALENDAR.finalBefore(timeframe, nowMs) : nowMs - lenMs + 1;
      const candles: Candle[] = [];
      for (const bar of page.results ?? []) {
        // sort=asc: a bar at or before the last one is a repeat across a page boundary.
        if (bar.t <= lastT) continue;
        lastT = bar.t;
        if (bar.t < fromMs || bar.t >= toMs || bar.t >= finalBefore) continue;
        candles.push({
          venue: this.venue,
          symbol,
          timeframe,
          openTime: bar.t,
          open: decimalString(bar.o),
          high: decimalString(bar.h),
          low: decimalString(bar.l),
          close: decimalString(bar.c),
          volume: decimalString(bar.v),
          ...(bar.n === undefined ? {} : { trades: bar.n }),
        });
      }
      if (candles.length > 0) yield { candles, envelopes: candles.map((c) => candleEnvelope(c, res.receivedAtMs)) };
      url = page.next_url === undefined || page.next_url === '' ? undefined : this.nextUrl(page.next_url, seen);
    }
  }

  /** One request; Polygon's key and plan refusals become PolygonAuthError / PolygonPlanError. */
  private async get(req: HttpRequest, fromMs: number, toMs: number): Promise<HttpResponse> {
    try {
      return await this.http.get(req);
    } catch (err) {
      if (!(err instanceof VenueRejectedError)) throw err;
      if (err.status === 401) throw new PolygonAuthError(err.venueMessage === 'API Key was not provided' ? 'missing-key' : 'unknown-key', err.venueMessage);
      if (err.status === 403) throw new PolygonPlanError(fromMs, toMs, err.venueMessage);
      throw err;
    }
  }

  private nextUrl(nextUrl: string, seen: Set<string>): string {
    let next: URL;
    try {
      next = new URL(nextUrl);
    } catch {
      throw new MalformedPayloadError(this.venue, 'next_url is not a URL', nextUrl);
    }
    if (next.origin !== new URL(this.baseUrl).origin) {
      throw new MalformedPayloadError(this.venue, `next_url points to another origin than ${new URL(this.baseUrl).origin}`, nextUrl);
    }
    next.searchParams.set('apiKey', this.apiKey ?? '');
    const text = next.toString();
    if (seen.has(text)) throw new MalformedPayloadError(this.venue, 'next_url repeats a page already fetched', nextUrl);
    return text;
  }
}
