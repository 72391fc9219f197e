import { AsyncLocalStorage } from 'node:async_hooks';
import type * as Ccxt from 'ccxt';
import type { Exchange, OHLCV, OrderBook } from 'ccxt';
import {
  bookEnvelope,
  candleEnvelope,
  ConfigError,
  lastClosedOpenTime,
  MalformedPayloadError,
  RateLimitedError,
  TickfleetError,
  timeframeMs,
  TransientError,
  UnrecoverableError,
  type BookLevel,
  type BookSnapshot,
  type Candle,
  type Envelope,
  type Timeframe,
} from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { intOption } from '../internal/options.js';
import { bodyString, DECIMAL_RE, decimalString, parseJsonBuffer } from '../internal/parse-payload.js';
import type { BookSource, CandlePage, CandleSource, FetchOptions, Instrument, VenueAdapterOptions } from '../types.js';

/** The defaults of {@link CcxtAdapterOptions}. */
export const CCXT_DEFAULTS = Object.freeze({
  /** Candles per OHLCV request when the exchange's `features` name no maximum. */
  maxCandlesPerPage: 500,
  /** Levels per side asked of `fetchOrderBook`. */
  depthLimit: 100,
  /** Retry guess after a rate-limit answer that named no time (the connector's freeze applies then). */
  rateLimitFallbackMs: 10_000,
  /** Multiplier from CCXT's endpoint cost to the venue's own weight units (Kraken: 1 per call). */
  costScale: 1,
});

/** The module `ccxt`, loaded on first use: only a worker serving a CCXT connector pays for it. */
let ccxtModule: Promise<typeof Ccxt> | undefined;
function loadCcxt(): Promise<typeof Ccxt> {
  ccxtModule ??= import('ccxt');
  return ccxtModule;
}

/** What one call into CCXT carries down to the HTTP request it makes. */
interface CallContext {
  signal?: AbortSignal | undefined;
  endpoint?: string;
  weight?: number;
  /** CCXT parses numbers as the exchange's decimal text (its `number = String` mode) in this call. */
  decimals?: boolean;
}

export interface CcxtAdapterOptions extends VenueAdapterOptions {
  /** The CCXT exchange id (`kraken`, `coinbase`). @defaultValue the venue name */
  exchange?: string;
  /** Candles per OHLCV request, at most the exchange's own maximum. @defaultValue the exchange's `features` maximum, else CCXT_DEFAULTS.maxCandlesPerPage */
  maxCandlesPerPage?: number;
  /** Levels per side of book snapshots. @defaultValue CCXT_DEFAULTS.depthLimit */
  depthLimit?: number;
  /** CCXT `options` of the exchange (Binance: `{ fetchMarkets: { types: ['spot'] } }`). */
  exchangeOptions?: Record<string, unknown>;
}

/**
 * The CCXT engine: a venue served by a CCXT exchange, under the fleet's budget. CCXT's own throttle is
 * off (`enableRateLimit: false`); every request CCXT makes leaves through this adapter's budgeted HTTP
 * client instead (its `fetch` is replaced), at the weight CCXT's cost table gives the endpoint, so
 * budget hooks, HTTP errors (429, 418, 5xx, timeouts) and latency statistics are those of every other
 * adapter. Errors CCXT raises from an answer's body become tickfleet's typed errors: RateLimitExceeded
 * and DDoSProtection rate limited, NetworkError (ExchangeNotAvailable, RequestTimeout) transient, the
 * rest (BadSymbol, BadRequest, AuthenticationError, NotSupported) unrecoverable with the venue's words.
 * `ccxt` itself is imported on the first request, so building the adapter costs nothing.
 */
export class CcxtAdapter extends HttpVenueAdapter<string> implements CandleSource, BookSource {
  readonly exchangeId: string;
  readonly depthLimit: number;
  private readonly pageOption: number | undefined;
  private readonly exchangeOptions: Record<string, unknown> | undefined;
  private exchangeP: Promise<Exchange> | undefined;
  private loaded: Exchange | undefined;
  private marketsP: Promise<unknown> | undefined;
  private readonly calls = new AsyncLocalStorage<CallContext>();

  constructor(venue: string, options: CcxtAdapterOptions) {
    super(options, { venue, weights: {}, limits: { errorPolicy: { rateLimitFallbackMs: CCXT_DEFAULTS.rateLimitFallbackMs } } });
    this.exchangeId = options.exchange ?? venue;
    this.depthLimit = intOption('depthLimit', options.depthLimit, CCXT_DEFAULTS.depthLimit, 1, 5000);
    this.exchangeOptions = options.exchangeOptions;
    this.pageOption = options.maxCandlesPerPage === undefined ? undefined : intOption('maxCandlesPerPage', options.maxCandlesPerPage, 1, 1, 100_000);
  }

  /** Candles per page: the option, capped by the exchange's own maximum once CCXT is loaded. */
  get maxCandlesPerPage(): number {
    const own = this.loaded ? exchangeMaxPage(this.loaded) : undefined;
    return Math.min(this.pageOption ?? own ?? CCXT_DEFAULTS.maxCandlesPerPage, own ?? Number.POSITIVE_INFINITY);
  }

  override toVenueSymbol(symbol: string): string {
    return this.loaded?.markets?.[symbol]?.id ?? symbol;
  }

  override fromVenueSymbol(venueSymbol: string): string {
    return this.loaded?.markets_by_id?.[venueSymbol]?.[0]?.symbol ?? venueSymbol;
  }

  /**
   * Pages `fetchOHLCV(symbol, timeframe, since = cursor, limit)`: next cursor = last open time + one
   * interval (an empty page: `limit` intervals on), until `toMs` or the last closed candle. Only closed
   * candles are stored, with CCXT's timestamps as the exchange gave them; a page that does not move
   * forward ends the range.
   */
  async *fetchCandles(symbol: string, timeframe: Timeframe, fromMs: number, toMs: number, options: FetchOptions = {}): AsyncIterable<CandlePage> {
    const ex = await this.exchange();
    const lenMs = timeframeMs(timeframe);
    let cursor = fromMs;
    while (cursor < toMs) {
      const endOpen = Math.min(toMs - 1, lastClosedOpenTime(this.clock.now(), timeframe));
      if (cursor > endOpen) return;
      const slots = Math.floor((endOpen - cursor) / lenMs) + 1;
      const limit = Math.max(1, Math.min(this.maxCandlesPerPage, slots));
      const rows: OHLCV[] = await this.call(options.signal, () => ex.fetchOHLCV(symbol, timeframe, cursor, limit), true);
      const receivedAtMs = this.clock.now();
      const candles: Candle[] = [];
      let prevOpen = cursor - 1;
      for (const [openTime, open, high, low, close, volume] of rows) {
        if (typeof openTime !== 'number' || openTime <= prevOpen) {
          throw new MalformedPayloadError(this.venue, `fetchOHLCV row openTime ${String(openTime)} not after ${prevOpen}`, rows);
        }
        prevOpen = openTime;
        if (openTime > endOpen || openTime + lenMs > receivedAtMs) continue; // outside the range, or still open
        candles.push({
          venue: this.venue,
          symbol,
          timeframe,
          openTime,
          open: this.decimal(open, rows),
          high: this.decimal(high, rows),
          low: this.decimal(low, rows),
          close: this.decimal(close, rows),
          volume: this.decimal(volume, rows),
        });
      }
      if (candles.length > 0) yield { candles, envelopes: candles.map((c) => candleEnvelope(c, receivedAtMs, c.openTime + lenMs - 1)) };
      const last = rows.at(-1)?.[0];
      // An empty page of an exchange that answers by time window (Coinbase) is a hole of `limit`
      // candles, not the end: step over it. A page that does not move forward ends the range.
      if (last === undefined) cursor += limit * lenMs;
      else if (last < cursor) return;
      else cursor = last + lenMs;
    }
  }

  /** The exchange's active spot markets, unified symbols (`BTC/USD`) with the exchange's ids. */
  async listInstruments(options: FetchOptions = {}): Promise<Instrument[]> {
    const ex = await this.exchange();
    const markets = await this.call(options.signal, () => ex.loadMarkets());
    return Object.values(markets).flatMap((m) =>
      m !== undefined && m.spot && m.active !== false
        ? [{ symbol: m.symbol, venueSymbol: m.id ?? m.symbol, meta: { base: m.base, quote: m.quote, precision: m.precision } }]
        : [],
    );
  }

  /** `fetchOrderBook(symbol, depthLimit)`: one snapshot, stamped by the exchange when it says, else when sent. */
  async fetchBook(symbol: string, options: FetchOptions = {}): Promise<{ book: BookSnapshot; envelope: Envelope }> {
    const ex = await this.exchange();
    const sentAtMs = this.clock.now();
    const ob: OrderBook = await this.call(options.signal, () => ex.fetchOrderBook(symbol, this.depthLimit));
    const receivedAtMs = this.clock.now();
    const level = (l: unknown[]): BookLevel => [num(l[0]), num(l[1])];
    const nonce = typeof ob.nonce === 'number' && Number.isSafeInteger(ob.nonce) ? ob.nonce : undefined;
    const book: BookSnapshot = {
      venue: this.venue,
      symbol,
      timeMs: typeof ob.timestamp === 'number' ? ob.timestamp : sentAtMs,
      ...(nonce === undefined ? {} : { sequence: nonce }),
      bids: ob.bids.map(level),
      asks: ob.asks.map(level),
    };
    const id = `${this.venue}:${this.toVenueSymbol(symbol)}:book:${nonce ?? book.timeMs}`;
    return { book, envelope: bookEnvelope(book, id, receivedAtMs, typeof ob.timestamp === 'number' ? ob.timestamp : undefined) };
  }

  /** The CCXT exchange, created on first use with its throttle off and its HTTP routed through this adapter. */
  protected exchange(): Promise<Exchange> {
    this.exchangeP ??= this.createExchange().catch((err: unknown) => {
      this.exchangeP = undefined;
      throw err;
    });
    return this.exchangeP;
  }

  private async createExchange(): Promise<Exchange> {
    const ccxt = await loadCcxt();
    const exchanges = ccxt.exchanges as unknown as Record<string, (new (config: object) => Exchange) | undefined>;
    const Ctor = Object.hasOwn(exchanges, this.exchangeId) ? exchanges[this.exchangeId] : undefined;
    if (Ctor === undefined) {
      throw new ConfigError('exchange', `a CCXT exchange id for venue ${this.venue} (e.g. kraken, coinbase); got ${this.exchangeId}`);
    }
    const ex = new Ctor({ enableRateLimit: false, ...(this.exchangeOptions ? { options: this.exchangeOptions } : {}) });
    pointAt(ex, this.baseUrl);
    const fetch2 = ex.fetch2.bind(ex);
    // Each request's endpoint and weight, from CCXT's own cost table, travel with the call to `fetch`.
    ex.fetch2 = (
      path: unknown,
      api: unknown = 'public',
      method = 'GET',
      params: Record<string, unknown> = {},
      headers?: unknown,
      body?: unknown,
      config: object = {},
    ) => {
      const weight = costToWeight(ex.calculateRateLimiterCost(api, method, path, params, config) as number);
      const outer = this.calls.getStore();
      return this.calls.run({ signal: outer?.signal, endpoint: String(path), weight }, () => fetch2(path, api, method, params, headers, body, config));
    };
    // Candle values stay the exchange's own decimal text, as the hand-written adapters store them (no
    // number and back); elsewhere numbers, as CCXT sorts book levels by price.
    Object.defineProperty(ex, 'number', { get: () => (this.calls.getStore()?.decimals === true ? String : Number), set: () => undefined });
    ex.fetch = async (url: string, method = 'GET', headers?: Record<string, string>) => {
      const ctx = this.calls.getStore() ?? {};
      if (method !== 'GET')
        throw new UnrecoverableError(this.venue, `${this.venue}: the CCXT engine sends only GET market-data requests (asked ${method} ${url})`);
      const res = await this.send({
        endpoint: ctx.endpoint ?? 'ccxt',
        weight: ctx.weight ?? 1,
        url,
        signal: ctx.signal,
        headers: { ...ex.headers, ...headers },
      });
      const text = bodyString(res.body);
      // CCXT's reading (JSON, requoted where an integer passes 2^53), a large page parsed in pieces.
      let parsed = parseOrUndefined(res.body);
      if (ex.hasUnsafeInteger(parsed) === true) parsed = ex.parseJson(text);
      if (parsed === undefined || parsed === null || typeof parsed !== 'object' || !(ENVELOPES[this.exchangeId]?.(parsed) ?? true)) {
        throw new MalformedPayloadError(this.venue, `${ctx.endpoint ?? url} answered a body that is not the exchange's JSON`, text);
      }
      ex.handleErrors(res.status, '', url, method, {}, text, parsed, headers, undefined);
      return parsed;
    };
    this.loaded = ex;
    return ex;
  }

  /**
   * The exchange's markets, loaded once for every caller, outside any one unit's signal. CCXT keeps a
   * failed load's rejection for good; it is dropped here so the next call loads again.
   */
  private ensureMarkets(ex: Exchange): Promise<unknown> {
    if (ex.markets !== undefined) return Promise.resolve();
    this.marketsP ??= this.calls
      .run({}, () => ex.loadMarkets())
      .catch((err: unknown) => {
        this.marketsP = undefined;
        (ex as { marketsLoading?: unknown }).marketsLoading = undefined;
        throw err;
      });
    return this.marketsP;
  }

  /**
   * Runs one CCXT call (markets loaded first) with the caller's signal attached to its requests, its
   * errors typed; with `decimals`, the numbers CCXT parses in it are the exchange's decimal strings.
   */
  private async call<T>(signal: AbortSignal | undefined, fn: () => Promise<T>, decimals = false): Promise<T> {
    signal?.throwIfAborted();
    try {
      if (this.loaded) await this.ensureMarkets(this.loaded);
      return await this.calls.run({ signal, decimals }, fn);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw await this.typed(err);
    }
  }

  /** A value CCXT parsed in `decimals` mode as a decimal string; anything else spoils the page. */
  private decimal(value: unknown, page: unknown): string {
    const text = typeof value === 'number' ? decimalString(value) : value;
    if (typeof text === 'string' && DECIMAL_RE.test(text)) return text;
    throw new MalformedPayloadError(this.venue, `fetchOHLCV value ${String(value)} is not a decimal`, page);
  }

  /** A CCXT error as tickfleet's typed error; tickfleet's own errors (the HTTP client's) pass as they are. */
  private async typed(err: unknown): Promise<unknown> {
    if (err instanceof TickfleetError) return err;
    const ccxt = await loadCcxt();
    const message = err instanceof Error ? err.message : String(err);
    // RateLimitExceeded is not a DDoSProtection in CCXT 4.5: both are named.
    if (err instanceof ccxt.DDoSProtection || err instanceof ccxt.RateLimitExceeded) {
      const retryAtMs = this.clock.now() + CCXT_DEFAULTS.rateLimitFallbackMs;
      return new RateLimitedError(this.venue, retryAtMs, `${this.venue} rate limited: ${message}`, { cause: err });
    }
    if (err instanceof ccxt.NetworkError) return new TransientError(this.venue, `${this.venue}: ${message}`, undefined, { cause: err });
    if (err instanceof ccxt.BaseError) return new UnrecoverableError(this.venue, `${this.venue} refused: ${message}`, undefined, { cause: err });
    return err;
  }
}

/**
 * The envelope each exchange wraps every answer in, where it has one. CCXT reads a missing field as
 * empty (an empty book, no candles), so a spoiled answer would pass as no data without this check.
 */
const ENVELOPES: Readonly<Record<string, (body: object) => boolean>> = {
  kraken: (body) => !Array.isArray(body) && Array.isArray((body as { error?: unknown }).error),
};

/** A job type the CCXT engine runs. */
type CcxtJobType = 'ohlcv' | 'book' | 'discovery';

/**
 * Every exchange CCXT lists with the job types the engine runs on it: `ohlcv` where the exchange has
 * `fetchOHLCV`, `book` where it has `fetchOrderBook`, and `discovery` (its markets, each given a book
 * job) where it has both `fetchMarkets` and `fetchOrderBook`. Loads `ccxt` (about a second of CPU).
 */
export async function ccxtExchangeJobs(): Promise<Array<{ exchange: string; jobs: CcxtJobType[] }>> {
  const ccxt = await loadCcxt();
  const exchanges = ccxt.exchanges as unknown as Record<string, new (config: object) => Exchange>;
  const out: Array<{ exchange: string; jobs: CcxtJobType[] }> = [];
  for (const id of Object.keys(exchanges).sort()) {
    let has: Record<string, unknown>;
    try {
      has = new exchanges[id]!({}).has as Record<string, unknown>;
    } catch {
      continue;
    }
    const book = has['fetchOrderBook'] === true;
    const jobs: CcxtJobType[] = [
      ...(has['fetchOHLCV'] === true ? (['ohlcv'] as const) : []),
      ...(book ? (['book'] as const) : []),
      ...(book && has['fetchMarkets'] === true ? (['discovery'] as const) : []),
    ];
    out.push({ exchange: id, jobs });
  }
  return out;
}

/** CCXT's cost in the venue's units: Kraken's calls cost 1 (CCXT says 1.2 for OHLC to slow its own throttle). */
function costToWeight(cost: number): number {
  return Math.max(1, Math.round((Number.isFinite(cost) ? cost : 1) * CCXT_DEFAULTS.costScale));
}

/** The exchange's largest OHLCV page, as its CCXT `features` declare it. */
function exchangeMaxPage(ex: Exchange): number | undefined {
  const limit = (ex.features as { spot?: { fetchOHLCV?: { limit?: unknown } } } | undefined)?.spot?.fetchOHLCV?.limit;
  return typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

function parseOrUndefined(body: Buffer): unknown {
  try {
    return parseJsonBuffer(body);
  } catch {
    return undefined;
  }
}

/** A CCXT number as tickfleet's decimal string, never in exponent form. */
function num(value: unknown): string {
  return typeof value === 'number' ? decimalString(value) : String(value);
}

/**
 * Points every REST root of the exchange at `baseUrl` keeping each root's path (`…/api/v3` stays
 * `<baseUrl>/api/v3`), unless `baseUrl` is one of the exchange's own hosts.
 */
function pointAt(ex: Exchange, baseUrl: string): void {
  // CCXT fills `{hostname}` when it signs a request; the roots are compared and rewritten filled.
  const implode = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.replace('{hostname}', String(ex.hostname))
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, implode(x)]))
        : v;
  const api = implode(ex.urls['api']);
  const target = new URL(baseUrl);
  const roots: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') roots.push(v);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(api);
  if (roots.some((r) => URL.canParse(r) && new URL(r).host === target.host)) {
    ex.urls['api'] = api as typeof ex.urls.api;
    return;
  }
  const rewrite = (v: unknown): unknown => {
    if (typeof v === 'string') return URL.canParse(v) ? `${baseUrl}${new URL(v).pathname.replace(/\/+$/, '')}` : v;
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rewrite(x)]));
    return v;
  };
  ex.urls['api'] = rewrite(api) as typeof ex.urls.api;
}
