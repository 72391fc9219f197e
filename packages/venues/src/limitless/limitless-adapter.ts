import { type BookLevel, type BookSnapshot, type Envelope, bookEnvelope } from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption } from '../internal/options.js';
import { decimalString } from '../internal/parse-payload.js';
import type { BookSource, FetchOptions, Instrument, VenueAdapterOptions } from '../types.js';
import { LimitlessActiveMarkets, LimitlessOrderbook, type LimitlessChildMarket, type LimitlessMarket } from './limitless-schemas.js';

/** The API refuses `limit` above 25 on `GET /markets/active` (the official SDK documents "max 25"). */
export const LIMITLESS_MAX_PAGE_SIZE = 25;

/** The defaults of {@link LimitlessAdapterOptions}. */
export const LIMITLESS_DEFAULTS = Object.freeze({
  discoveryPageSize: LIMITLESS_MAX_PAGE_SIZE,
  maxDiscoveryPages: 400,
  rateLimitFallbackMs: 10_000,
});

export interface LimitlessAdapterOptions extends VenueAdapterOptions {
  /** Markets per discovery page, at most 25. @defaultValue LIMITLESS_DEFAULTS.discoveryPageSize */
  discoveryPageSize?: number;
  /** Upper bound on discovery pages per listing, so a misbehaving total never loops forever. @defaultValue LIMITLESS_DEFAULTS.maxDiscoveryPages */
  maxDiscoveryPages?: number;
  /**
   * Wait after a 429 without Retry-After. Limitless publishes no numeric limits; a 429 is its only
   * throttling signal. @defaultValue LIMITLESS_DEFAULTS.rateLimitFallbackMs
   */
  rateLimitFallbackMs?: number;
}

/**
 * Limitless Exchange (real root: https://api.limitless.exchange): active markets from
 * `GET /markets/active?page=&limit=` (pages from 1, `{data, totalMarketsCount}`), order-book snapshots
 * from `GET /markets/{slug}/orderbook`. The instrument is the market slug (the symbol in both
 * forms): the venue keys its book by slug, and that book is the YES token's. AMM markets have no
 * order book and are not listed; a group (NegRisk) market lists each of its CLOB child markets.
 */
export class LimitlessAdapter extends HttpVenueAdapter<'markets' | 'orderbook'> implements BookSource {
  private readonly pageSize: number;
  private readonly maxPages: number;

  constructor(options: LimitlessAdapterOptions) {
    const fallbackMs = durationOption('rateLimitFallbackMs', options.rateLimitFallbackMs, LIMITLESS_DEFAULTS.rateLimitFallbackMs, 0);
    super(options, { venue: 'limitless', weights: { markets: 1, orderbook: 1 }, limits: { errorPolicy: { rateLimitFallbackMs: fallbackMs } } });
    this.pageSize = intOption('discoveryPageSize', options.discoveryPageSize, LIMITLESS_DEFAULTS.discoveryPageSize, 1, LIMITLESS_MAX_PAGE_SIZE);
    this.maxPages = intOption('maxDiscoveryPages', options.maxDiscoveryPages, LIMITLESS_DEFAULTS.maxDiscoveryPages, 1, 100_000);
  }

  /** Every order-book market that is active and not expired, paging until `totalMarketsCount` or a short page. */
  async listInstruments(options: FetchOptions = {}): Promise<Instrument[]> {
    const out: Instrument[] = [];
    const seen = new Set<string>();
    let listed = 0;
    for (let page = 1; page <= this.maxPages; page++) {
      const url = this.url('/markets/active', { page: String(page), limit: String(this.pageSize) });
      const {
        data: { data, totalMarketsCount },
      } = await this.getJson('markets', url, LimitlessActiveMarkets, options);
      for (const market of data) {
        for (const instrument of this.instrumentsOf(market)) {
          if (seen.has(instrument.symbol)) continue;
          seen.add(instrument.symbol);
          out.push(instrument);
        }
      }
      listed += data.length;
      if (data.length < this.pageSize || listed >= totalMarketsCount) break;
    }
    return out;
  }

  private instrumentsOf(market: LimitlessMarket): Instrument[] {
    if (market.marketType === 'group') {
      return (market.markets ?? []).flatMap((child) => this.instrumentOf(child, market.slug));
    }
    return this.instrumentOf(market);
  }

  private instrumentOf(market: LimitlessChildMarket, groupSlug?: string): Instrument[] {
    if (market.tradeType !== 'clob' || market.expired === true) return [];
    return [
      {
        symbol: market.slug,
        venueSymbol: market.slug,
        ...(market.title ? { name: market.title } : {}),
        meta: {
          marketId: String(market.id),
          slug: market.slug,
          ...(groupSlug ? { groupSlug } : {}),
          ...(market.conditionId ? { conditionId: market.conditionId } : {}),
          ...(market.tokens ? { tokenIds: { yes: market.tokens.yes, no: market.tokens.no } } : {}),
          ...(typeof market.expirationTimestamp === 'number' ? { expirationTimestamp: market.expirationTimestamp } : {}),
          ...(market.expirationDate ? { expirationDate: market.expirationDate } : {}),
        },
        market: {
          marketId: String(market.id),
          slug: market.slug,
          ...(market.title ? { title: market.title } : {}),
          // The book is the YES token's; both tokens belong to the market.
          outcomes: market.tokens ? ['Yes', 'No'] : [],
          tokenIds: market.tokens ? [market.tokens.yes, market.tokens.no] : [],
          ...(typeof market.expirationTimestamp === 'number' ? { expiresAtMs: market.expirationTimestamp } : {}),
        },
      },
    ];
  }

  /**
   * One snapshot of the market's (YES token) book, levels best first. The venue sends no timestamp,
   * so the snapshot time is the receive time. Prices are kept as sent; sizes and `minSize` arrive in
   * millionths of a share (USDC's 6 decimals, as CCXT's Limitless client reads them) and are stored
   * in shares, the unit of every other venue's book records.
   */
  async fetchBook(symbol: string, options: FetchOptions = {}): Promise<{ book: BookSnapshot; envelope: Envelope }> {
    const url = this.url(`/markets/${encodeURIComponent(this.toVenueSymbol(symbol))}/orderbook`);
    const { data: raw, res } = await this.getJson('orderbook', url, LimitlessOrderbook, options);
    const level = (l: { price: number | string; size: number | string }): BookLevel => [decimalString(l.price), sharesOf(l.size)];
    const bids = raw.bids.map(level).sort((a, b) => Number(b[0]) - Number(a[0]));
    const asks = raw.asks.map(level).sort((a, b) => Number(a[0]) - Number(b[0]));
    const timeMs = res.receivedAtMs;
    const book: BookSnapshot = { venue: this.venue, symbol, timeMs, bids, asks };
    const extra = {
      tokenId: raw.tokenId,
      ...(raw.adjustedMidpoint == null ? {} : { adjustedMidpoint: decimalString(raw.adjustedMidpoint) }),
      ...(raw.lastTradePrice == null ? {} : { lastTradePrice: decimalString(raw.lastTradePrice) }),
      ...(raw.maxSpread == null ? {} : { maxSpread: decimalString(raw.maxSpread) }),
      ...(raw.minSize == null ? {} : { minSize: sharesOf(raw.minSize) }),
    };
    // No venue timestamp or sequence: each poll is its own snapshot, keyed by slug and receive time.
    return { book, envelope: bookEnvelope(book, `limitless:${symbol}:book:${timeMs}`, res.receivedAtMs, undefined, extra) };
  }
}

/** Millionths of a share (the venue's unit) as shares, exactly: the decimal point moved six places left. */
export function sharesOf(millionths: number | string): string {
  const [int = '0', frac = ''] = decimalString(millionths).split('.');
  const padded = int.padStart(7, '0');
  const whole = padded.slice(0, -6).replace(/^0+(?=\d)/, '');
  const fraction = `${padded.slice(-6)}${frac}`.replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}
