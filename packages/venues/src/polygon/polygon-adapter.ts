import { calendarFor, candleEnvelope, MalformedPayloadError, timeframeMs, ValidationError, type Candle, type Timeframe } from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption } from '../internal/options.js';
import { decimalString } from '../internal/parse-payload.js';
import type { CandlePage, CandleSource, FetchOptions, VenueAdapterOptions } from '../types.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
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
export class PolygonAdapter extends HttpVenueAdapter<'aggs', 'apiKey'> implements CandleSource {
  readonly maxCandlesPerPage: number;

  constructor(options: PolygonAdapterOptions) {
    const windowMs = durationOption('rateLimitWindowMs', options.rateLimitWindowMs, POLYGON_DEFAULTS.rateLimitWindowMs);
    super(options, {
      venue: 'polygon',
      weights: { aggs: 1 },
      limits: { errorPolicy: { rateLimitFallbackMs: windowMs } },
      credentials: { apiKey: { value: options.apiKey, option: 'apiKey', env: 'POLYGON_API_KEY', what: 'a Polygon API key' } },
    });
    this.maxCandlesPerPage = intOption('maxCandlesPerPage', options.maxCandlesPerPage, POLYGON_DEFAULTS.maxCandlesPerPage, 1, 50_000);
  }

  /**
   * Closed bars with `fromMs <= t < toMs`, one page per request. Timestamps are sent as epoch ms (both
   * ends inclusive at Polygon, hence `toMs - 1`); `next_url` is followed with the key re-attached, and
   * only on the base URL's own origin so the key never leaves for another host.
   */
  async *fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options: FetchOptions = {}): AsyncIterable<CandlePage> {
    const apiKey = this.credential('apiKey');
    if (fromMs >= toMs) return;
    const range = RANGES[timeframe];
    if (!range) throw new ValidationError('timeframe', `a Polygon timeframe (${Object.keys(RANGES).join(' ')})`, timeframe);
    const [multiplier, timespan] = range;
    const lenMs = timeframeMs(timeframe);
    const ticker = encodeURIComponent(this.toVenueSymbol(symbol));
    const query = { adjusted: 'true', sort: 'asc', limit: String(this.maxCandlesPerPage), apiKey };
    let url: string | undefined = this.url(`/v2/aggs/ticker/${ticker}/range/${multiplier}/${timespan}/${fromMs}/${toMs - 1}`, query);
    const seen = new Set<string>();
    let lastT = Number.NEGATIVE_INFINITY;
    while (url !== undefined) {
      // Typed here: its type would otherwise depend on the page it fetches, which sets the next url.
      const pageUrl: string = url;
      seen.add(pageUrl);
      const { data: page, res } = await this.getJson('aggs', pageUrl, PolygonAggs, {
        signal: options.signal,
        rejected: (err) => this.rejection(err, fromMs, toMs),
      });
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
      url = page.next_url === undefined || page.next_url === '' ? undefined : this.nextUrl(page.next_url, apiKey, seen);
    }
  }

  /** Polygon's key and plan refusals as PolygonAuthError / PolygonPlanError. */
  private rejection(err: VenueRejectedError, fromMs: number, toMs: number): Error {
    if (err.status === 401) return new PolygonAuthError(err.venueMessage === 'API Key was not provided' ? 'missing-key' : 'unknown-key', err.venueMessage);
    if (err.status === 403) return new PolygonPlanError(fromMs, toMs, err.venueMessage);
    return err;
  }

  private nextUrl(nextUrl: string, apiKey: string, seen: Set<string>): string {
    let next: URL;
    try {
      next = new URL(nextUrl);
    } catch {
      throw new MalformedPayloadError(this.venue, 'next_url is not a URL', nextUrl);
    }
    if (next.origin !== new URL(this.baseUrl).origin) {
      throw new MalformedPayloadError(this.venue, `next_url points to another origin than ${new URL(this.baseUrl).origin}`, nextUrl);
    }
    next.searchParams.set('apiKey', apiKey);
    const text = next.toString();
    if (seen.has(text)) throw new MalformedPayloadError(this.venue, 'next_url repeats a page already fetched', nextUrl);
    return text;
  }
}
