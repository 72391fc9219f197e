import {
  ApiKeyRejectedError,
  MalformedPayloadError,
  seriesEnvelope,
  TransientError,
  UnknownSeriesError,
  ValidationError,
  type SeriesObservation,
} from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption } from '../internal/options.js';
import type { FetchOptions, SeriesPage, SeriesSource, VenueAdapterOptions } from '../types.js';
import type { VenueRejectedError } from '../venue-rejected-error.js';
import { FredObservations } from './fred-schemas.js';

/** FRED's largest `limit`. */
const MAX_PAGE_SIZE = 100_000;

/** The defaults of {@link FredAdapterOptions}. */
export const FRED_DEFAULTS = Object.freeze({
  pageSize: MAX_PAGE_SIZE,
  /** FRED allows 120 requests per minute per key. */
  rateLimitWindowMs: 60_000,
});

export interface FredAdapterOptions extends VenueAdapterOptions {
  /** API key (the worker passes its FRED_API_KEY); required before the first request. */
  apiKey?: string;
  /** `limit` per observations request (FRED allows 1 to 100000). @defaultValue FRED_DEFAULTS.pageSize */
  pageSize?: number;
  /**
   * Length of the vendor's request window: FRED's 429 carries no Retry-After, so the adapter
   * retries one full window later (FRED allows 120 requests per minute per key). @defaultValue FRED_DEFAULTS.rateLimitWindowMs
   */
  rateLimitWindowMs?: number;
}

/**
 * The Treasury constant-maturity curve, shortest tenor first: the FRED series a `treasury-curve`
 * job collects in one unit (H.15 market yields, percent, business days).
 */
export const TREASURY_CURVE_SERIES = ['DGS1MO', 'DGS3MO', 'DGS6MO', 'DGS1', 'DGS2', 'DGS3', 'DGS5', 'DGS7', 'DGS10', 'DGS20', 'DGS30'] as const;
/** The job symbol that stands for {@link TREASURY_CURVE_SERIES}. */
export const TREASURY_CURVE = 'treasury-curve';

/** FRED series ids are upper-case letters, digits and underscores (`DGS10`, `A191RL1Q225SBEA`). */
const SERIES_ID = /^[A-Z0-9_]{1,64}$/;
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;
/** FRED's end of the open real-time period: the value is still the current one. */
const REALTIME_OPEN_END = '9999-12-31';

/**
 * FRED series observations (`/fred/series/observations`, JSON), paged by `offset`. Each request
 * weighs 1 against FRED's 120 requests per minute per key.
 *
 * It asks for the real-time period from the first observation date to `9999-12-31`, so FRED
 * answers every vintage published for those dates with its own real-time period (ALFRED's view):
 * a value's `realtime_start` is the day it was published, the same whenever it is fetched, which
 * keeps observation keys stable across runs and makes each revision a record of its own. (FRED's
 * default real-time period, today, stamps every row with today's date instead.)
 */
export class FredAdapter extends HttpVenueAdapter<'observations', 'apiKey'> implements SeriesSource {
  private readonly pageSize: number;

  constructor(options: FredAdapterOptions) {
    const windowMs = durationOption('rateLimitWindowMs', options.rateLimitWindowMs, FRED_DEFAULTS.rateLimitWindowMs);
    super(options, {
      venue: 'fred',
      weights: { observations: 1 },
      limits: { errorPolicy: { rateLimitFallbackMs: windowMs } },
      credentials: { apiKey: { value: options.apiKey, option: 'apiKey', env: 'FRED_API_KEY', what: 'a FRED API key' } },
    });
    this.pageSize = intOption('pageSize', options.pageSize, FRED_DEFAULTS.pageSize, 1, MAX_PAGE_SIZE);
  }

  seriesOf(symbol: string): readonly string[] {
    if (symbol === TREASURY_CURVE) return TREASURY_CURVE_SERIES;
    if (!SERIES_ID.test(symbol)) throw new ValidationError('symbol', `a FRED series id (e.g. DGS10, CPIAUCSL) or ${TREASURY_CURVE}`, symbol);
    return [symbol];
  }

  async *fetchSeries(seriesId: string, fromDate: string, toDate: string, options: FetchOptions = {}): AsyncIterable<SeriesPage> {
    const apiKey = this.credential('apiKey');
    if (!SERIES_ID.test(seriesId)) throw new ValidationError('seriesId', 'a FRED series id (e.g. DGS10)', seriesId);
    if (!ISO_DAY.test(fromDate)) throw new ValidationError('fromDate', 'a date YYYY-MM-DD', fromDate);
    if (!ISO_DAY.test(toDate)) throw new ValidationError('toDate', 'a date YYYY-MM-DD', toDate);
    if (fromDate > toDate) return;
    for (let offset = 0; ;) {
      const query = new URLSearchParams({
        series_id: seriesId,
        observation_start: fromDate,
        observation_end: toDate,
        realtime_start: fromDate,
        realtime_end: REALTIME_OPEN_END,
        sort_order: 'asc',
        limit: String(this.pageSize),
        offset: String(offset),
        file_type: 'json',
        api_key: apiKey,
      });
      const { data: page, res } = await this.getJson('observations', this.url('/fred/series/observations', query), FredObservations, {
        signal: options.signal,
        rejected: (err) => this.rejection(err, seriesId),
      });
      if (page.offset !== offset) throw new MalformedPayloadError(this.venue, `observations page has offset ${page.offset}, asked for ${offset}`, res.body);
      const observations: SeriesObservation[] = page.observations
        // A page answers the asked range; a row outside it is not this unit's to store.
        .filter((o) => o.date >= fromDate && o.date <= toDate)
        .map((o) => ({
          venue: this.venue,
          symbol: seriesId,
          date: o.date,
          // "." is FRED's "no value for this date" (a holiday in a daily series): kept as null, never 0.
          value: o.value === '.' ? null : Number(o.value),
          realtimeStart: o.realtime_start,
          realtimeEnd: o.realtime_end,
          units: page.units,
        }));
      if (observations.length > 0) yield { observations, envelopes: observations.map((o) => seriesEnvelope(o, res.receivedAtMs)) };
      offset += page.observations.length;
      if (page.observations.length === 0 || offset >= page.count) return;
    }
  }

  /**
   * FRED's refusals as typed errors: a refused key is ApiKeyRejectedError, an unknown series
   * UnknownSeriesError, any other 400 a VenueRejectedError naming FRED's message; 423 Locked
   * (documented without detail) is retried as transient; 429 and 5xx stay as the client maps them.
   */
  private rejection(err: VenueRejectedError, seriesId: string): Error {
    if (err.status === undefined) return err;
    const message = err.venueMessage ?? '';
    if (/api_key/i.test(message)) return new ApiKeyRejectedError(this.venue, err.status, message);
    if (/series does not exist/i.test(message)) return new UnknownSeriesError(this.venue, seriesId, err.status, message);
    if (err.status === 423) return new TransientError(this.venue, `${this.venue} observations answered HTTP 423 Locked${message ? ` (${message})` : ''}`, 423);
    return err;
  }
}
