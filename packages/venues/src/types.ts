import type { AfterResponseInfo, BeforeRequestInfo, BookSnapshot, Candle, Clock, Envelope, Timeframe, Trade } from '@tickfleet/core';

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
  /** Per-request timeout. @defaultValue 10000 */
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

/** An instrument a venue lists: its tickfleet symbol and the venue's own spelling. */
export interface Instrument {
  symbol: string;
  venueSymbol: string;
  name?: string;
  meta?: Record<string, unknown>;
}

export interface BookSource {
  listInstruments(options?: FetchOptions): Promise<Instrument[]>;
  fetchBook(symbol: string, options?: FetchOptions): Promise<{ book: BookSnapshot; envelope: Envelope }>;
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
  fetchFile(ref: FileRef, options?: FetchOptions): Promise<{ trades: Trade[]; envelopes: Envelope[] }>;
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

export function isBookSource(adapter: VenueAdapter): adapter is VenueAdapter & BookSource {
  return typeof (adapter as Partial<BookSource>).fetchBook === 'function';
}

export function isFileSource(adapter: VenueAdapter): adapter is VenueAdapter & FileSource {
  return typeof (adapter as Partial<FileSource>).fetchFile === 'function';
}
