import {
  alignDown,
  bookEnvelope,
  candleEnvelope,
  lastClosedOpenTime,
  MalformedPayloadError,
  timeframeMs,
  ValidationError,
  type BookSnapshot,
  type Candle,
  type Envelope,
  type Timeframe,
  type Trade,
  tradeEnvelope,
} from '@tickfleet/core';
import { HttpVenueAdapter, type VenueLimits } from '../http-venue-adapter.js';
import { durationOption, intOption } from '../internal/options.js';
import type {
  BatchBookSource,
  BookBatch,
  CandlePage,
  CandleSource,
  FetchOptions,
  FetchTradesOptions,
  Instrument,
  TradeIdHole,
  TradePage,
  TradesFrom,
  TradeSource,
  VenueAdapterOptions,
} from '../types.js';
import {
  BinanceAggTrades,
  BinanceBookTicker,
  BinanceBookTickers,
  BinanceDepth,
  BinanceExchangeInfo,
  BinanceHistoricalTrades,
  BinanceKlines,
  isBinanceKlines,
} from './binance-schemas.js';
import { binanceSymbolBySuffix, binanceVenueSymbol } from './binance-symbols.js';
import { binanceWeights, type BinanceEndpoint } from './binance-weights.js';
import { alignedWindowPolicy } from '../venue-http-client.js';

/** Binance's largest klines `limit`. */
const MAX_KLINES_LIMIT = 1000;
/** Binance's largest `historicalTrades` / `aggTrades` `limit`. */
const MAX_TRADES_LIMIT = 1000;
/** `aggTrades` refuses `startTime`/`endTime` an hour or more apart: a window spans an hour less 1 ms (endTime inclusive). */
const AGG_TRADES_WINDOW_MS = 3_600_000;

/** The defaults of {@link BinanceAdapterOptions}. */
export const BINANCE_DEFAULTS = Object.freeze({
  maxCandlesPerPage: MAX_KLINES_LIMIT,
  maxTradesPerPage: MAX_TRADES_LIMIT,
  /** Weight 5, the lightest depth request. */
  depthLimit: 100,
  /** Binance counts used weight per clock minute. */
  usedWeightWindowMs: 60_000,
  /**
   * Symbols one `ticker/bookTicker?symbols=` asks for at most (depth 1). Binance documents no maximum
   * and weighs the request 4 whatever the count; 100 keeps the URL near 2 KB.
   */
  maxBookTickersPerRequest: 100,
});

/** `GET /api/v3/ticker/bookTicker` weights (spot REST docs): 2 for one `symbol`, 4 for `symbols` or for every symbol. */
const BOOK_TICKER_WEIGHTS = Object.freeze({ bookTicker: 2, bookTickers: 4 });

/** How Binance counts and refuses: used weight per clock minute in a header, a 429 retried at the window's end. */
export function binanceLimits(windowMs: number = BINANCE_DEFAULTS.usedWeightWindowMs): VenueLimits {
  return { usedWeightHeader: 'x-mbx-used-weight-1m', usedWeightWindowMs: windowMs, errorPolicy: alignedWindowPolicy(windowMs) };
}

export interface BinanceAdapterOptions extends VenueAdapterOptions {
  /** Candles per klines request (Binance allows 1..1000). @defaultValue BINANCE_DEFAULTS.maxCandlesPerPage */
  maxCandlesPerPage?: number;
  /** Trades per historicalTrades request (Binance allows 1..1000). @defaultValue BINANCE_DEFAULTS.maxTradesPerPage */
  maxTradesPerPage?: number;
  /**
   * Levels per side in depth snapshots (1..5000); sets the depth weight. At 1 (top of book) books
   * come from `ticker/bookTicker`, many symbols per request. @defaultValue BINANCE_DEFAULTS.depthLimit
   */
  depthLimit?: number;
  /**
   * Window `X-MBX-USED-WEIGHT-1M` counts in; Binance counts per clock minute, emulations may use a
   * shorter window. Also where a 429's retry time is snapped to. @defaultValue BINANCE_DEFAULTS.usedWeightWindowMs
   */
  usedWeightWindowMs?: number;
}

/**
 * Binance spot market data: klines (closed candles only, paged by `startTime`), trades (paged by
 * trade id), depth snapshots and exchangeInfo symbol discovery. Every response's `X-MBX-USED-WEIGHT-1M` reaches the worker through
 * `afterResponse`; 429 becomes RateLimitedError at the window end, 418 becomes BannedError at the
 * `banned until <ms>` the body names.
 */
export class BinanceAdapter extends HttpVenueAdapter<BinanceEndpoint | 'bookTicker' | 'bookTickers'> implements CandleSource, BatchBookSource, TradeSource {
  readonly maxCandlesPerPage: number;
  readonly maxTradesPerPage: number;
  readonly tradeCursor = 'id';
  readonly tradesByTime = true;
  readonly depthLimit: number;
  /** Top of book (depth 1): many symbols per `bookTicker` request; deeper books: one `depth` request per book. */
  readonly maxBooksPerRequest: number;
  /** venue symbol -> tickfleet symbol, filled from exchangeInfo. */
  private readonly fromVenue = new Map<string, string>();

  constructor(options: BinanceAdapterOptions) {
    const depthLimit = intOption('depthLimit', options.depthLimit, BINANCE_DEFAULTS.depthLimit, 1, 5000);
    const windowMs = durationOption('usedWeightWindowMs', options.usedWeightWindowMs, BINANCE_DEFAULTS.usedWeightWindowMs);
    super(options, {
      venue: 'binance',
      weights: { ...binanceWeights(depthLimit), ...BOOK_TICKER_WEIGHTS },
      limits: binanceLimits(windowMs),
    });
    this.maxCandlesPerPage = intOption('maxCandlesPerPage', options.maxCandlesPerPage, BINANCE_DEFAULTS.maxCandlesPerPage, 1, MAX_KLINES_LIMIT);
    this.maxTradesPerPage = intOption('maxTradesPerPage', options.maxTradesPerPage, BINANCE_DEFAULTS.maxTradesPerPage, 1, MAX_TRADES_LIMIT);
    this.depthLimit = depthLimit;
    this.maxBooksPerRequest = depthLimit === 1 ? BINANCE_DEFAULTS.maxBookTickersPerRequest : 1;
  }

  override toVenueSymbol(symbol: string): string {
    return binanceVenueSymbol(symbol);
  }

  override fromVenueSymbol(venueSymbol: string): string {
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
      const query = { symbol: venueSymbol, interval: timeframe, startTime: String(cursor), endTime: String(endOpen), limit: String(limit) };
      const { data: rows, res } = await this.getJson('klines', this.url('/api/v3/klines', query), BinanceKlines, {
        signal: options.signal,
        conforms: isBinanceKlines,
      });
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

  /**
   * Pages `GET /api/v3/historicalTrades?fromId` (every fill, the ids a `@trade` stream carries, so a
   * polled trade and a streamed one are the same record): from the cursor's next id, or, from a time,
   * the first trade id of the first aggregate at or after it (`aggTrades?startTime&limit=1`). Ids are
   * contiguous per symbol, so an id the answer skips is a hole; the page's cursor is its last id. With
   * `untilMs` the walk ends at the first trade at or after it.
   */
  async *fetchTrades(symbol: string, from: TradesFrom, options: FetchTradesOptions = {}): AsyncIterable<TradePage> {
    const venueSymbol = this.toVenueSymbol(symbol);
    let next: number;
    if ('cursor' in from) next = from.cursor + 1;
    else {
      const first = await this.firstTradeId(venueSymbol, from.sinceMs, options.untilMs ?? this.clock.now(), options);
      if (first === undefined) return;
      next = first;
    }
    for (;;) {
      const query = { symbol: venueSymbol, fromId: String(next), limit: String(this.maxTradesPerPage) };
      const { data: rows, res } = await this.getJson('historicalTrades', this.url('/api/v3/historicalTrades', query), BinanceHistoricalTrades, {
        signal: options.signal,
      });
      if (rows.length > this.maxTradesPerPage)
        throw new MalformedPayloadError(this.venue, `historicalTrades returned ${rows.length} rows for limit ${this.maxTradesPerPage}`, rows.length);
      const trades: Trade[] = [];
      const envelopes: Envelope[] = [];
      const holes: TradeIdHole[] = [];
      let ended = false;
      for (const row of rows) {
        // Out-of-order ids would move the cursor back or past trades: refuse the page.
        if (row.id < next) throw new MalformedPayloadError(this.venue, `historicalTrades row id ${row.id} before fromId ${next}`, row);
        if (options.untilMs !== undefined && row.time >= options.untilMs) {
          ended = true;
          break;
        }
        if (row.id > next) holes.push({ fromId: next, toId: row.id - 1 });
        next = row.id + 1;
        const trade: Trade = {
          venue: this.venue,
          symbol,
          tradeId: String(row.id),
          timeMs: row.time,
          price: row.price,
          size: row.qty,
          side: row.isBuyerMaker ? 'sell' : 'buy',
        };
        trades.push(trade);
        envelopes.push(tradeEnvelope(trade, `binance:${venueSymbol}:trade:${row.id}`, res.receivedAtMs));
      }
      if (trades.length > 0) yield { trades, envelopes, cursor: next - 1, holes };
      if (ended || rows.length < this.maxTradesPerPage) return;
    }
  }

  /**
   * The first trade id at or after `fromMs` and before `toMs`: `aggTrades?startTime&endTime&limit=1`, one
   * window under an hour at a time (Binance refuses wider ones, -1127) until one holds an aggregate.
   */
  private async firstTradeId(venueSymbol: string, fromMs: number, toMs: number, options: FetchOptions): Promise<number | undefined> {
    for (let start = fromMs; start < toMs; start += AGG_TRADES_WINDOW_MS) {
      const end = Math.min(start + AGG_TRADES_WINDOW_MS, toMs) - 1;
      const query = { symbol: venueSymbol, startTime: String(start), endTime: String(end), limit: '1' };
      const { data: aggs } = await this.getJson('aggTrades', this.url('/api/v3/aggTrades', query), BinanceAggTrades, { signal: options.signal });
      if (aggs[0] !== undefined) return aggs[0].f;
    }
    return undefined;
  }

  /** `GET /api/v3/exchangeInfo`: every TRADING symbol as BASE/QUOTE; also teaches `fromVenueSymbol`. */
  async listInstruments(options: FetchOptions = {}): Promise<Instrument[]> {
    const { data: info } = await this.getJson('exchangeInfo', this.url('/api/v3/exchangeInfo'), BinanceExchangeInfo, options);
    const out: Instrument[] = [];
    for (const s of info.symbols) {
      const symbol = `${s.baseAsset}/${s.quoteAsset}`;
      this.fromVenue.set(s.symbol.toUpperCase(), symbol);
      if (s.status !== 'TRADING') continue;
      out.push({ symbol, venueSymbol: s.symbol, meta: { status: s.status, baseAsset: s.baseAsset, quoteAsset: s.quoteAsset } });
    }
    return out;
  }

  /** `GET /api/v3/depth`: one snapshot; `lastUpdateId` is its sequence. At depth 1, `ticker/bookTicker?symbol=` (weight 2, not 5). */
  async fetchBook(symbol: string, options: FetchOptions = {}): Promise<{ book: BookSnapshot; envelope: Envelope }> {
    if (this.depthLimit === 1) {
      const url = this.url('/api/v3/ticker/bookTicker', { symbol: this.toVenueSymbol(symbol) });
      const { data, res } = await this.getJson('bookTicker', url, BinanceBookTicker, options);
      return this.topOfBook(symbol, data, res.sentAtMs, res.receivedAtMs);
    }
    const venueSymbol = this.toVenueSymbol(symbol);
    const url = this.url('/api/v3/depth', { symbol: venueSymbol, limit: String(this.depthLimit) });
    const { data: depth, res } = await this.getJson('depth', url, BinanceDepth, options);
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

  /**
   * Books of up to {@link maxBooksPerRequest} symbols. At depth 1, one `ticker/bookTicker?symbols=[…]`
   * (weight 4 however many); a symbol the answer leaves out comes back missing (Binance itself fails
   * the whole request for one unknown symbol, -1121). Deeper books: one `depth` request for one symbol.
   */
  async fetchBooks(symbols: readonly string[], options: FetchOptions = {}): Promise<BookBatch> {
    if (symbols.length === 0 || symbols.length > this.maxBooksPerRequest) {
      throw new ValidationError('symbols', `1 to ${this.maxBooksPerRequest} symbols per request at depth ${this.depthLimit}`, symbols.length);
    }
    if (this.depthLimit !== 1) return { books: [await this.fetchBook(symbols[0]!, options)], missing: [], weight: this.weights.depth };
    const asked = new Map(symbols.map((s) => [this.toVenueSymbol(s), s]));
    const url = this.url('/api/v3/ticker/bookTicker', { symbols: JSON.stringify([...asked.keys()]) });
    const { data, res } = await this.getJson('bookTickers', url, BinanceBookTickers, options);
    const books: BookBatch['books'] = [];
    for (const t of data) {
      const symbol = asked.get(t.symbol);
      if (symbol === undefined) continue;
      asked.delete(t.symbol);
      books.push(this.topOfBook(symbol, t, res.sentAtMs, res.receivedAtMs));
    }
    return { books, missing: [...asked.values()], weight: this.weights.bookTickers };
  }

  /** A one-level book from a bookTicker entry; a side Binance prints as zero price and quantity is empty. */
  private topOfBook(symbol: string, t: BinanceBookTicker, sentAtMs: number, receivedAtMs: number): { book: BookSnapshot; envelope: Envelope } {
    const level = (price: string, qty: string): Array<[string, string]> => (Number(price) === 0 && Number(qty) === 0 ? [] : [[price, qty]]);
    // bookTicker carries neither a timestamp nor an update id: the moment the request was sent bounds it best
    const book: BookSnapshot = { venue: this.venue, symbol, timeMs: sentAtMs, bids: level(t.bidPrice, t.bidQty), asks: level(t.askPrice, t.askQty) };
    return { book, envelope: bookEnvelope(book, `binance:${t.symbol}:bookTicker:${sentAtMs}`, receivedAtMs, undefined) };
  }
}
