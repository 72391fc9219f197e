import { AsyncLocalStorage } from 'node:async_hooks';
import type * as Ccxt from 'ccxt';
import type { Exchange, OHLCV, OrderBook, Trade as CcxtTrade } from 'ccxt';
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
  type Trade,
  tradeEnvelope,
} from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { intOption } from '../internal/options.js';
import { bodyString, DECIMAL_RE, decimalString, parseJsonBuffer } from '../internal/parse-payload.js';
import type {
  BookSource,
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

/** The defaults of {@link CcxtAdapterOptions}. */
export const CCXT_DEFAULTS = Object.freeze({
  /** Candles per OHLCV request when the exchange's `features` name no maximum. */
  maxCandlesPerPage: 500,
  /** Trades per `fetchTrades` request of an exchange not in {@link TRADES_PAGING} (CCXT declares no maximum). */
  maxTradesPerPage: 100,
  /** Pages one trades fetch walks at most before it ends (the next poll goes on from its cursor). */
  maxTradePages: 100,
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
export class CcxtAdapter extends HttpVenueAdapter<string> implements CandleSource, BookSource, TradeSource {
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

  /** What a trades job's cursor holds: a trade id on exchanges paged by id ({@link TRADES_PAGING}), else a time. */
  get tradeCursor(): 'id' | 'time' {
    return TRADES_PAGING[this.exchangeId]?.afterId ? 'id' : 'time';
  }

  /** Whether `fetchTrades` takes a time: not on exchanges paged by id, whose first page is their newest. */
  get tradesByTime(): boolean {
    return this.tradeCursor === 'time';
  }

  /** Trades per `fetchTrades` page: the exchange's documented maximum where known, else CCXT_DEFAULTS.maxTradesPerPage. */
  get maxTradesPerPage(): number {
    return TRADES_PAGING[this.exchangeId]?.maxPage ?? CCXT_DEFAULTS.maxTradesPerPage;
  }

  /**
   * Pages `fetchTrades(symbol, since, limit)` forward. By time (Kraken): `since` = the cursor, which
   * is the last stored trade's time, so each walk fetches that trade again (the sink keeps it once)
   * and the next page starts at the last trade's time. By id (Coinbase, whose trades take no time):
   * the exchange's id parameter after the cursor; a job's first page is the newest, trades from
   * `sinceMs` on. On exchanges with contiguous integer ids ({@link TRADES_PAGING}) an id the pages
   * skip is a hole. Trades keep CCXT's unified values; a trade without an id is keyed by its fields.
   */
  async *fetchTrades(symbol: string, from: TradesFrom, options: FetchTradesOptions = {}): AsyncIterable<TradePage> {
    const ex = await this.exchange();
    const paging = TRADES_PAGING[this.exchangeId];
    const limit = this.maxTradesPerPage;
    const byId = paging?.afterId !== undefined;
    let cursor = 'cursor' in from ? from.cursor : undefined;
    let since = 'cursor' in from ? (byId ? undefined : from.cursor) : from.sinceMs;
    /** The last trade id stored or fetched, where ids are contiguous integers. */
    let lastId = byId ? cursor : undefined;
    for (let page = 0; page < CCXT_DEFAULTS.maxTradePages; page++) {
      const params = byId && cursor !== undefined ? paging!.afterId!(cursor) : {};
      // `since` on the second: CCXT drops rows before `since` after the exchange counted them (Kraken takes
      // seconds), and a page it shortened so would read as the last one.
      // A resumed walk asks from a second earlier still, so an exchange whose `since` is exclusive answers the cursor's trade too.
      const back = page === 0 && 'cursor' in from ? 1000 : 0;
      const askSince = (byId && cursor !== undefined) || since === undefined ? undefined : Math.floor(since / 1000) * 1000 - back;
      const rows: CcxtTrade[] = await this.call(options.signal, () => ex.fetchTrades(symbol, askSince, limit, params));
      const receivedAtMs = this.clock.now();
      const trades: Trade[] = [];
      const envelopes: Envelope[] = [];
      const holes: TradeIdHole[] = [];
      let ended = false;
      let newest = cursor;
      const sorted = [...rows].sort(byTimeThenId);
      // The first answer of a walk resumed by time holds the cursor's own trade; one that starts later lost what lies between.
      const resumedAt = page === 0 && !byId && 'cursor' in from ? from.cursor : undefined;
      const firstMs = sorted[0]?.timestamp;
      const missing = resumedAt !== undefined && typeof firstMs === 'number' && firstMs > resumedAt ? { fromMs: resumedAt + 1, toMs: firstMs } : undefined;
      for (const row of sorted) {
        const timeMs = row.timestamp;
        if (typeof timeMs !== 'number') throw new MalformedPayloadError(this.venue, `fetchTrades row without a timestamp`, row.info);
        if (since !== undefined && timeMs < since) continue;
        if (options.untilMs !== undefined && timeMs >= options.untilMs) {
          ended = true;
          break;
        }
        const id = row.id ?? `${timeMs}:${num(row.price)}:${num(row.amount)}:${row.side ?? ''}`;
        const numericId = paging?.contiguousIds && /^\d{1,15}$/.test(id) ? Number(id) : undefined;
        if (numericId !== undefined) {
          if (lastId !== undefined && numericId <= lastId) continue; // fetched already (a page repeating the last instant)
          if (lastId !== undefined && numericId > lastId + 1) holes.push({ fromId: lastId + 1, toId: numericId - 1 });
          lastId = numericId;
        }
        const trade: Trade = {
          venue: this.venue,
          symbol,
          tradeId: id,
          timeMs,
          price: num(row.price),
          size: num(row.amount),
          ...(row.side === 'buy' || row.side === 'sell' ? { side: row.side } : {}),
        };
        trades.push(trade);
        envelopes.push(tradeEnvelope(trade, `${this.venue}:${symbol}:trade:${id}`, receivedAtMs));
        newest = byId ? numericId : timeMs;
      }
      if (trades.length > 0 && newest !== undefined) yield { trades, envelopes, cursor: newest, holes, ...(missing ? { missing } : {}) };
      if (ended || rows.length < limit || newest === undefined) return;
      // A full page that does not move the cursor (a page of trades all at one instant) ends the walk.
      if (newest === cursor || (!byId && newest === since)) return;
      cursor = newest;
      if (!byId) since = newest;
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
type CcxtJobType = 'ohlcv' | 'trades' | 'book' | 'discovery';

/**
 * How an exchange's public trades page, where CCXT does not say: `maxPage` its documented largest
 * page, `contiguousIds` whether its trade ids are integers one apart per market (a skipped id is a
 * hole), `afterId` the `fetchTrades` params asking for the trades after an id (the exchange pages by
 * id, not time: its trades job's cursor is then that id).
 */
const TRADES_PAGING: Readonly<Record<string, { maxPage?: number; contiguousIds?: boolean; afterId?: (id: number) => Record<string, string> }>> = {
  // Trades: `count` up to 1000 (docs.kraken.com "Get Recent Trades"), `trade_id` per pair.
  kraken: { maxPage: 1000, contiguousIds: true },
  // /products/{id}/trades: `limit` up to 1000, `before=<id>` the trades newer than that id.
  coinbaseexchange: { maxPage: 1000, contiguousIds: true, afterId: (id) => ({ before: String(id) }) },
};

/** CCXT trades in time order, ties by id. */
function byTimeThenId(a: CcxtTrade, b: CcxtTrade): number {
  return (a.timestamp ?? 0) - (b.timestamp ?? 0) || Number(a.id ?? 0) - Number(b.id ?? 0);
}

/**
 * Every exchange CCXT lists with the job types the engine runs on it: `ohlcv` where the exchange has
 * `fetchOHLCV`, `trades` where it has `fetchTrades`, `book` where it has `fetchOrderBook`, and
 * `discovery` (its markets, each given a book job) where it has both `fetchMarkets` and
 * `fetchOrderBook`. Loads `ccxt` (about a second of CPU).
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
      ...(has['fetchTrades'] === true ? (['trades'] as const) : []),
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
