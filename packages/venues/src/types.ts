import type {
  JobType,
  AfterResponseInfo,
  BeforeRequestInfo,
  BookSnapshot,
  Candle,
  Clock,
  Envelope,
  OptionContract,
  SeriesObservation,
  Timeframe,
  Trade,
} from '@tickfleet/core';

export type { AfterResponseInfo, BeforeRequestInfo } from '@tickfleet/core';

/**
 * The two hooks a caller attaches to every upstream request of an adapter; this package only
 * declares them and calls them. The worker attaches its budget gate (`@tickfleet/budget`, in
 * `VenueRunner.makeAdapter`): `beforeRequest` spends the weight from the fleet budget (and may
 * throw, e.g. BudgetExhaustedError, to abort the request before it is sent); `afterResponse`
 * corrects the budget and feeds latency/failure statistics.
 */
export interface RequestHooks {
  beforeRequest?(info: BeforeRequestInfo): Promise<void>;
  afterResponse?(info: AfterResponseInfo): void | Promise<void>;
}

/** Options every adapter accepts. */
export interface VenueAdapterOptions {
  /** Venue root URL; the adapter appends the real API path (`${baseUrl}/api/v3/klines`). */
  baseUrl: string;
  hooks?: RequestHooks;
  /** Per-request timeout. @defaultValue VENUE_HTTP_DEFAULTS.timeoutMs */
  timeoutMs?: number;
  /** Time source for `receivedAtMs`, closed-candle cut-offs and retry times. @defaultValue systemClock */
  clock?: Clock;
}

export interface FetchOptions {
  signal?: AbortSignal;
}

/** One page of candles: the worker persists it and advances the cursor before asking for the next. */
export interface CandlePage {
  candles: Candle[];
  /** One envelope per candle, channel `candles`, messageId = the candle key. */
  envelopes: Envelope[];
}

export interface CandleSource {
  /** Largest number of candles one page (one request) can hold. */
  readonly maxCandlesPerPage: number;
  /** Closed candles with `fromMs <= openTime < toMs`, ascending, page by page. */
  fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options?: FetchOptions): AsyncIterable<CandlePage>;
}

/**
 * The market an order-book instrument belongs to, as discovery saw it: what the worker keeps in
 * the venue's active set and writes to the `markets` stream when the instrument joins or leaves it.
 */
export interface MarketMeta {
  marketId: string;
  slug?: string;
  /** The market's question or title. */
  title?: string;
  /** Outcome names, in token order (Polymarket `["Yes", "No"]`). */
  outcomes: string[];
  /** The market's outcome token ids, in outcome order. */
  tokenIds: string[];
  /** When the market expires (epoch ms), if the venue says; the instrument is retired after it. */
  expiresAtMs?: number;
}

/**
 * A venue that serves candles of many symbols in one request (Alpaca's `/v2/stocks/bars?symbols=…`):
 * one request serves many jobs. Pages hold candles of any of the symbols, ascending per symbol.
 */
export interface MultiSymbolCandleSource {
  /** Most symbols one request may name. */
  readonly maxSymbolsPerRequest: number;
  /** Closed candles of `symbols` with `fromMs <= openTime < toMs`, page by page. */
  fetchCandlesOfSymbols(symbols: readonly string[], timeframe: Timeframe, fromMs: number, toMs: number, options?: FetchOptions): AsyncIterable<CandlePage>;
}

/** An instrument a venue lists: its tickfleet symbol and the venue's own spelling. */
export interface Instrument {
  symbol: string;
  venueSymbol: string;
  name?: string;
  meta?: Record<string, unknown>;
  /** Order-book venues: the instrument's market. */
  market?: MarketMeta;
}

export interface BookSource {
  listInstruments(options?: FetchOptions): Promise<Instrument[]>;
  fetchBook(symbol: string, options?: FetchOptions): Promise<{ book: BookSnapshot; envelope: Envelope }>;
}

/** What one batch book request brought: the books the venue answered, and the symbols it had none for. */
export interface BookBatch {
  books: Array<{ book: BookSnapshot; envelope: Envelope }>;
  /** Symbols asked for that the answer left out (unknown token, resolved market): each one failed alone. */
  missing: string[];
  /** Budget weight the request spent. */
  weight: number;
}

/** A venue that serves many books in one request (Polymarket's `POST /books`). */
export interface BatchBookSource extends BookSource {
  /** The most symbols one request may ask for (the venue's documented maximum). */
  readonly maxBooksPerRequest: number;
  fetchBooks(symbols: readonly string[], options?: FetchOptions): Promise<BookBatch>;
}

/** One downloadable file of a file-publishing venue. */
export interface FileRef {
  /** File name as the venue lists it, e.g. `DETR-posttrade-2024-01-15T08_00.json.gz`. */
  name: string;
  /** Market the file belongs to, e.g. `DETR`. */
  market: string;
  /** UTC date `YYYY-MM-DD`. */
  date: string;
  /** Start of the minute the file covers (epoch ms), when the name carries it. */
  minuteMs?: number;
}

/** Options of `FileSource.listFiles`. */
export interface ListFilesOptions extends FetchOptions {
  /** Only these markets (Xetra: `DETR`); absent: every market the adapter was configured with. */
  markets?: readonly string[];
}

export interface FileSource {
  listFiles(date: string, options?: ListFilesOptions): Promise<FileRef[]>;
  /** One file's trades; `bytes`: the size of the download as it came (compressed), for progress. */
  fetchFile(ref: FileRef, options?: FetchOptions): Promise<{ trades: Trade[]; envelopes: Envelope[]; bytes: number }>;
}

/** One option-chain snapshot of an underlier: every contract, and one envelope (channel `options`) per contract. */
export interface OptionChainSnapshot {
  symbol: string;
  contracts: OptionContract[];
  envelopes: Envelope[];
}

export interface OptionChainSource {
  fetchOptionChain(symbol: string, options?: FetchOptions): Promise<OptionChainSnapshot>;
}

/** One page of series observations: the worker persists it before asking for the next. */
export interface SeriesPage {
  observations: SeriesObservation[];
  /** One envelope per observation, channel `series`, messageId = the observation key. */
  envelopes: Envelope[];
}

/** A publisher of economic series (FRED). Dates are UTC days `YYYY-MM-DD`. */
export interface SeriesSource {
  /**
   * The series ids a job symbol stands for: a named group (FRED's `treasury-curve`: every
   * constant-maturity tenor) or one series id. A symbol that is neither fails with a ValidationError.
   */
  seriesOf(symbol: string): readonly string[];
  /**
   * Every published value (each vintage) of the observations of `seriesId` dated `fromDate` to
   * `toDate` inclusive, page by page; a date without a value has `value: null`.
   */
  fetchSeries(seriesId: string, fromDate: string, toDate: string, options?: FetchOptions): AsyncIterable<SeriesPage>;
}

/** Where a trades fetch starts: after a job's cursor, or at a time (a job's first run, a backfill chunk). */
export type TradesFrom = { cursor: number } | { sinceMs: number };

/** Options of `TradeSource.fetchTrades`. */
export interface FetchTradesOptions extends FetchOptions {
  /** Only trades before this time (epoch ms, exclusive): a backfill chunk's end. Absent: up to the newest trade. */
  untilMs?: number;
}

/** Trade ids a venue with contiguous ids skipped, `fromId..toId` inclusive (the stream gap ledger's unit). */
export interface TradeIdHole {
  fromId: number;
  toId: number;
}

/** One page of trades: the worker persists it, then moves the job's cursor to `cursor`. */
export interface TradePage {
  trades: Trade[];
  /** One envelope per trade, channel `trades`, the message id a streamed copy of the trade has. */
  envelopes: Envelope[];
  /** The job's cursor once this page is stored: the last trade's id or time, by the source's `tradeCursor`. */
  cursor: number;
  /** Ids missing before or inside this page where the venue's ids are contiguous. */
  holes: TradeIdHole[];
  /**
   * Trades missing in time before this page, `[fromMs, toMs)`: a walk by time whose first answer no
   * longer holds the cursor's trade (the venue's retention passed it, or it ignored `since`).
   */
  missing?: { fromMs: number; toMs: number };
}

/** A venue whose public trades can be polled since a cursor. */
export interface TradeSource {
  /** What a trades job's cursor holds: `id` the last stored trade id (the venue pages by id), `time` the last stored trade's time. */
  readonly tradeCursor: 'id' | 'time';
  /** Largest number of trades one page (one request) can hold. */
  readonly maxTradesPerPage: number;
  /** Whether the venue answers trades from a given time (so a time range can be backfilled); false: only its newest page. */
  readonly tradesByTime: boolean;
  /** Trades after `from` (past the cursor, or from `sinceMs` on), ascending, page by page, until the newest (or `untilMs`). */
  fetchTrades(symbol: string, from: TradesFrom, options?: FetchTradesOptions): AsyncIterable<TradePage>;
}

/** What every adapter has: its venue, declared request weights and symbol mapping. */
export interface VenueAdapter {
  readonly venue: string;
  /** Declared weight per endpoint name, as the venue counts it. */
  readonly weights: Readonly<Record<string, number>>;
  /** `BTC/USDT` -> `BTCUSDT` (identity for venues whose symbols are already tickfleet form). */
  toVenueSymbol(symbol: string): string;
  /** `BTCUSDT` -> `BTC/USDT`. */
  fromVenueSymbol(venueSymbol: string): string;
}

export function isCandleSource(adapter: VenueAdapter): adapter is VenueAdapter & CandleSource {
  return typeof (adapter as Partial<CandleSource>).fetchCandles === 'function';
}

export function isMultiSymbolCandleSource(adapter: VenueAdapter): adapter is VenueAdapter & MultiSymbolCandleSource {
  return typeof (adapter as Partial<MultiSymbolCandleSource>).fetchCandlesOfSymbols === 'function';
}

export function isBookSource(adapter: VenueAdapter): adapter is VenueAdapter & BookSource {
  return typeof (adapter as Partial<BookSource>).fetchBook === 'function';
}

export function isBatchBookSource(adapter: VenueAdapter): adapter is VenueAdapter & BatchBookSource {
  return typeof (adapter as Partial<BatchBookSource>).fetchBooks === 'function';
}

export function isFileSource(adapter: VenueAdapter): adapter is VenueAdapter & FileSource {
  return typeof (adapter as Partial<FileSource>).fetchFile === 'function';
}

export function isTradeSource(adapter: VenueAdapter): adapter is VenueAdapter & TradeSource {
  return typeof (adapter as Partial<TradeSource>).fetchTrades === 'function';
}

export function isOptionChainSource(adapter: VenueAdapter): adapter is VenueAdapter & OptionChainSource {
  return typeof (adapter as Partial<OptionChainSource>).fetchOptionChain === 'function';
}

export function isSeriesSource(adapter: VenueAdapter): adapter is VenueAdapter & SeriesSource {
  return typeof (adapter as Partial<SeriesSource>).fetchSeries === 'function';
}

/** The job types an adapter collects, by the sources it implements. */
export function supportedJobTypes(adapter: VenueAdapter): JobType[] {
  return [
    ...(isCandleSource(adapter) ? (['ohlcv'] as const) : []),
    ...(isTradeSource(adapter) ? (['trades'] as const) : []),
    ...(isBookSource(adapter) ? (['book', 'discovery'] as const) : []),
    ...(isFileSource(adapter) ? (['files'] as const) : []),
    ...(isOptionChainSource(adapter) ? (['options'] as const) : []),
    ...(isSeriesSource(adapter) ? (['series'] as const) : []),
  ];
}
