import { MalformedPayloadError, ValidationError, type BookLevel, type BookSnapshot, type Envelope, bookEnvelope } from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption, normaliseBaseUrl } from '../internal/options.js';
import { SlidingWindowPacer } from '../internal/sliding-window-pacer.js';
import { validatePayload } from '../internal/parse-payload.js';
import type { BatchBookSource, BookBatch, FetchOptions, Instrument, MarketMeta, VenueAdapterOptions } from '../types.js';
import type { HttpRequest, HttpResponse } from '../venue-http-client.js';
import {
  isPolymarketBooks,
  PolymarketBook,
  PolymarketBooks,
  PolymarketMarkets,
  PolymarketOutcomes,
  PolymarketTokenIds,
  type PolymarketMarket,
} from './polymarket-schemas.js';

/** The defaults of {@link PolymarketAdapterOptions}. */
export const POLYMARKET_DEFAULTS = Object.freeze({
  discoveryPageSize: 100,
  maxDiscoveryPages: 200,
  discoveryRateLimit: Object.freeze({ limit: 300, periodMs: 10_000 }),
  rateLimitFallbackMs: 10_000,
  /** Books one `POST /books` asks for at most: the CLOB's documented maximum ("Maximum 500 items per request"). */
  maxBooksPerRequest: 500,
  /**
   * Budget weight of one `POST /books`, in the connector's unit (CLOB `/book` requests: 1500 per 10 s). The
   * batch has a limit of its own, 500 requests per 10 s whatever their size, so one batch uses a third
   * as much of its limit's window as three `/book` requests of theirs: a budget that keeps `/book`
   * traffic within 1500 keeps batches within 500, and the two together within both.
   */
  booksWeight: 3,
});

export interface PolymarketAdapterOptions extends VenueAdapterOptions {
  /** Gamma API root for market discovery (real: https://gamma-api.polymarket.com). @defaultValue baseUrl */
  discoveryBaseUrl?: string;
  /** Markets per discovery page. @defaultValue POLYMARKET_DEFAULTS.discoveryPageSize */
  discoveryPageSize?: number;
  /** Upper bound on discovery pages per listing, so a misbehaving offset never loops forever. @defaultValue POLYMARKET_DEFAULTS.maxDiscoveryPages */
  maxDiscoveryPages?: number;
  /**
   * Gamma's own `/markets` limit, which the connector's budget (the CLOB `/book` limit) does not model:
   * discovery pages are paced to at most `limit` per sliding `periodMs`. One discovery unit runs at a
   * time per venue (its job lock), so this bounds the fleet's Gamma traffic. @defaultValue POLYMARKET_DEFAULTS.discoveryRateLimit
   */
  discoveryRateLimit?: { limit: number; periodMs: number };
  /**
   * Wait after a 429 without Retry-After. Polymarket throttles by first delaying responses
   * (Cloudflare-style), so a 429 means the queue behind it is full. @defaultValue POLYMARKET_DEFAULTS.rateLimitFallbackMs
   */
  rateLimitFallbackMs?: number;
}

/**
 * Polymarket: active markets and their CLOB token ids from Gamma `GET /markets`, order-book
 * snapshots from CLOB `GET /book?token_id=`; the token id is the symbol in both forms. Throttled
 * responses are just slow responses; the request timeout (`timeoutMs`) bounds them.
 */
export class PolymarketAdapter extends HttpVenueAdapter<'markets' | 'book' | 'books'> implements BatchBookSource {
  readonly maxBooksPerRequest = POLYMARKET_DEFAULTS.maxBooksPerRequest;
  private readonly discoveryBaseUrl: string;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly gammaPacer: SlidingWindowPacer;

  constructor(options: PolymarketAdapterOptions) {
    const fallbackMs = durationOption('rateLimitFallbackMs', options.rateLimitFallbackMs, POLYMARKET_DEFAULTS.rateLimitFallbackMs, 0);
    super(options, {
      venue: 'polymarket',
      weights: { markets: 1, book: 1, books: POLYMARKET_DEFAULTS.booksWeight },
      limits: { errorPolicy: { rateLimitFallbackMs: fallbackMs } },
    });
    this.discoveryBaseUrl = normaliseBaseUrl('discoveryBaseUrl', options.discoveryBaseUrl ?? options.baseUrl);
    this.pageSize = intOption('discoveryPageSize', options.discoveryPageSize, POLYMARKET_DEFAULTS.discoveryPageSize, 1, 1000);
    this.maxPages = intOption('maxDiscoveryPages', options.maxDiscoveryPages, POLYMARKET_DEFAULTS.maxDiscoveryPages, 1, 100_000);
    const gamma = options.discoveryRateLimit;
    this.gammaPacer = new SlidingWindowPacer(
      intOption('discoveryRateLimit.limit', gamma?.limit, POLYMARKET_DEFAULTS.discoveryRateLimit.limit, 1, 1_000_000),
      durationOption('discoveryRateLimit.periodMs', gamma?.periodMs, POLYMARKET_DEFAULTS.discoveryRateLimit.periodMs),
    );
  }

  /** Every order-book token of every active, open market, paging `offset` until a short page. */
  async listInstruments(options: FetchOptions = {}): Promise<Instrument[]> {
    const out: Instrument[] = [];
    const seen = new Set<string>();
    for (let page = 0; page < this.maxPages; page++) {
      const query = new URLSearchParams({ active: 'true', closed: 'false', limit: String(this.pageSize), offset: String(page * this.pageSize) });
      const { data: markets } = await this.getJson('markets', `${this.discoveryBaseUrl}/markets?${query.toString()}`, PolymarketMarkets, options);
      for (const market of markets) {
        for (const instrument of this.instrumentsOf(market)) {
          if (seen.has(instrument.symbol)) continue;
          seen.add(instrument.symbol);
          out.push(instrument);
        }
      }
      if (markets.length < this.pageSize) break;
    }
    return out;
  }

  /** Gamma's `/markets` has a limit of its own, which the fleet's budget does not model: paced here. */
  protected override send(req: HttpRequest): Promise<HttpResponse> {
    return req.endpoint === 'markets' ? this.gammaPacer.run(() => super.send(req), req.signal) : super.send(req);
  }

  private instrumentsOf(market: PolymarketMarket): Instrument[] {
    if (market.enableOrderBook === false || market.closed === true || market.active === false || !market.clobTokenIds) return [];
    const tokenIds = validatePayload(this.venue, 'markets.clobTokenIds', decodeJsonString(this.venue, market.clobTokenIds), PolymarketTokenIds);
    const outcomes = market.outcomes ? validatePayload(this.venue, 'markets.outcomes', decodeJsonString(this.venue, market.outcomes), PolymarketOutcomes) : [];
    const endMs = market.endDate ? Date.parse(market.endDate) : NaN;
    const meta: MarketMeta = {
      marketId: String(market.id),
      ...(market.slug ? { slug: market.slug } : {}),
      ...(market.question ? { title: market.question } : {}),
      outcomes,
      tokenIds,
      // An unparseable end date is no expiry (the instrument stays until the venue stops listing it), not a bad page.
      ...(Number.isFinite(endMs) ? { expiresAtMs: endMs } : {}),
    };
    return tokenIds.map((tokenId, i) => {
      const outcome = outcomes[i];
      return {
        symbol: tokenId,
        venueSymbol: tokenId,
        ...(market.question ? { name: outcome ? `${market.question} [${outcome}]` : market.question } : {}),
        meta: {
          marketId: String(market.id),
          ...(market.conditionId ? { conditionId: market.conditionId } : {}),
          ...(market.slug ? { slug: market.slug } : {}),
          ...(outcome ? { outcome } : {}),
        },
        market: meta,
      };
    });
  }

  /** One snapshot, levels reordered best first (the CLOB lists bids ascending and asks descending). */
  async fetchBook(symbol: string, options: FetchOptions = {}): Promise<{ book: BookSnapshot; envelope: Envelope }> {
    const { data: raw, res } = await this.getJson('book', this.url('/book', { token_id: this.toVenueSymbol(symbol) }), PolymarketBook, options);
    return this.snapshot(symbol, raw, res.receivedAtMs);
  }

  /**
   * Up to {@link maxBooksPerRequest} books in one CLOB `POST /books`, at the batch's budget weight.
   * The CLOB leaves out a token it has no book for (unknown, or its market resolved): those come
   * back as `missing`, for the caller to back off one by one, while the others are stored.
   */
  async fetchBooks(symbols: readonly string[], options: FetchOptions = {}): Promise<BookBatch> {
    if (symbols.length === 0 || symbols.length > this.maxBooksPerRequest) {
      throw new ValidationError('symbols', `1 to ${this.maxBooksPerRequest} symbols per POST /books`, symbols.length);
    }
    const asked = new Map(symbols.map((s) => [this.toVenueSymbol(s), s]));
    const body = [...asked.keys()].map((token_id) => ({ token_id }));
    const { data, res } = await this.postJson('books', this.url('/books'), body, PolymarketBooks, { ...options, conforms: isPolymarketBooks });
    const books: BookBatch['books'] = [];
    const answered = new Set<string>();
    for (const raw of data) {
      const symbol = asked.get(raw.asset_id);
      if (symbol === undefined || answered.has(raw.asset_id)) continue;
      answered.add(raw.asset_id);
      books.push(this.snapshot(symbol, raw, res.receivedAtMs));
    }
    const missing = [...asked].filter(([token]) => !answered.has(token)).map(([, symbol]) => symbol);
    return { books, missing, weight: this.weights.books };
  }

  private snapshot(symbol: string, raw: PolymarketBook, receivedAtMs: number): { book: BookSnapshot; envelope: Envelope } {
    const timeMs = parseTimestamp(raw.timestamp);
    if (timeMs === undefined) throw new MalformedPayloadError(this.venue, 'book timestamp is not epoch ms', raw.timestamp);
    const bids = bestFirst(raw.bids, true);
    const asks = bestFirst(raw.asks, false);
    const book: BookSnapshot = { venue: this.venue, symbol, timeMs, bids, asks };
    const extra = {
      market: raw.market,
      ...(raw.hash === undefined ? {} : { hash: raw.hash }),
      ...(raw.tick_size === undefined ? {} : { tickSize: raw.tick_size }),
      ...(raw.min_order_size === undefined ? {} : { minOrderSize: raw.min_order_size }),
      ...(raw.neg_risk === undefined ? {} : { negRisk: raw.neg_risk }),
    };
    // Same token and venue timestamp = the same snapshot, so a re-poll dedups.
    return { book, envelope: bookEnvelope(book, `polymarket:${raw.asset_id}:book:${timeMs}`, receivedAtMs, timeMs, extra) };
  }
}

/**
 * Levels best first. The CLOB lists them worst first (bids ascending, asks descending), so they are
 * reversed in one pass that also checks the order; only a list out of that order is sorted.
 */
function bestFirst(raw: ReadonlyArray<{ price: string; size: string }>, descending: boolean): BookLevel[] {
  const out: BookLevel[] = new Array<BookLevel>(raw.length);
  let ordered = true;
  let prev = descending ? Infinity : -Infinity;
  for (let i = 0; i < raw.length; i++) {
    const l = raw[raw.length - 1 - i]!;
    out[i] = [l.price, l.size];
    const price = Number(l.price);
    // equal prices too: the sort keeps their order as sent, a reversal would not
    if (descending ? price >= prev : price <= prev) ordered = false;
    prev = price;
  }
  if (ordered) return out;
  const cmp = descending ? (a: BookLevel, b: BookLevel) => Number(b[0]) - Number(a[0]) : (a: BookLevel, b: BookLevel) => Number(a[0]) - Number(b[0]);
  return raw.map((l) => [l.price, l.size] as BookLevel).sort(cmp);
}

function decodeJsonString(venue: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new MalformedPayloadError(venue, 'a JSON-encoded market field does not decode', text, { cause: err });
  }
}

/** Epoch ms from `"1700000000123"`, a number, or an ISO date string. */
function parseTimestamp(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}
