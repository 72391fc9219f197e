import { alignDown, isTimeframe, lastClosedOpenTime, timeframeMs } from '@tickfleet/core';
import { candleValuesAt, isHole, priceDecimals } from '../data/candles.js';
import { binanceInstrument, DEFAULT_BINANCE_SYMBOLS, type BinanceInstrument } from '../data/symbols.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { binanceAggTrades, binanceDepthSnapshot, binanceHistoricalTrades, type TradesResult } from './binance-ws-market.js';

const KLINES_DEFAULT_LIMIT = 500;
const KLINES_MAX_LIMIT = 1000;
const DEPTH_DEFAULT_LIMIT = 100;
/** Klines bodies kept for repeated requests: at most 64 pages of 1,000 candles, about 10 MB. */
const KLINES_BODIES_KEPT = 64;

/**
 * The other published spot limits beside REQUEST_WEIGHT (which follows the scenario). Only
 * REQUEST_WEIGHT is enforced: the fleet places no orders, and 61,000 raw requests per 5 minutes is
 * above what 6000 weight per minute allows at weight 1 or more.
 */
const FIXED_RATE_LIMITS = [
  { rateLimitType: 'ORDERS', interval: 'SECOND', intervalNum: 10, limit: 50 },
  { rateLimitType: 'ORDERS', interval: 'DAY', intervalNum: 1, limit: 160_000 },
  { rateLimitType: 'RAW_REQUESTS', interval: 'MINUTE', intervalNum: 5, limit: 61_000 },
];

/**
 * Binance spot REST (`/api/v3/*`): klines, depth, ticker/bookTicker, exchangeInfo, ping, time; weights, limits, filters
 * and error messages as published (developers.binance.com spot docs; messages as quoted in client issues).
 */
export class BinanceEmulation implements VenueEmulation {
  private instruments: Map<string, BinanceInstrument> | undefined;
  private instrumentsKey = '';
  /** The symbols array the map was last checked against: the same array skips the O(n) key join. */
  private instrumentsOf: readonly string[] | undefined;
  private exchangeInfoTail: string | undefined;
  /**
   * The last klines bodies served, by everything a body is made of (pair, interval, start, last
   * open time, limit, seed, holes): a client that fetches a page again (a retry after a malformed
   * or failed answer) gets the same bytes without the candles being computed again. Exact at any
   * time: the clock enters through the last open time.
   */
  private readonly klinesBodies = new Map<string, string>();

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET') return this.error(ctx, 405, -1000, `Unsupported method ${ctx.method}.`);
    switch (ctx.path) {
      case '/api/v3/klines':
        return { weight: 2, handle: () => this.klines(ctx) };
      case '/api/v3/depth':
        return { weight: depthWeight(ctx.query.get('limit')), handle: () => this.depth(ctx) };
      case '/api/v3/ticker/bookTicker':
        // 2 for one symbol, 4 for `symbols` or for every symbol (parameter omitted)
        return { weight: ctx.query.has('symbol') ? 2 : 4, handle: () => this.bookTicker(ctx) };
      case '/api/v3/aggTrades':
        return { weight: 4, handle: () => this.trades(ctx, binanceAggTrades) };
      case '/api/v3/historicalTrades':
      case '/api/v3/trades':
        return { weight: 25, handle: () => this.trades(ctx, binanceHistoricalTrades) };
      case '/api/v3/exchangeInfo':
        return { weight: 20, handle: () => this.exchangeInfo(ctx) };
      case '/api/v3/ping':
        return { weight: 1, handle: () => this.ok(ctx, '{}') };
      case '/api/v3/time':
        return { weight: 1, handle: () => this.ok(ctx, `{"serverTime":${ctx.nowMs}}`) };
      default:
        return this.error(ctx, 404, -1000, 'Not found.');
    }
  }

  tooManyRequests(ctx: RequestContext, retryAfterMs: number): Reply {
    return this.withWeight(
      ctx,
      jsonReply(
        429,
        {
          code: -1003,
          msg: `Too much request weight used; current limit is ${ctx.limit.limit} request weight per ${intervalText(ctx.limit.windowMs)}. Please use the websocket for live updates to avoid polling the API.`,
        },
        { 'Retry-After': retryAfterSeconds(retryAfterMs) },
      ),
    );
  }

  banned(ctx: RequestContext, bannedUntilMs: number): Reply {
    return this.withWeight(
      ctx,
      jsonReply(
        418,
        { code: -1003, msg: `Way too much request weight used; IP banned until ${bannedUntilMs}. Please use the websocket for live updates to avoid bans.` },
        { 'Retry-After': retryAfterSeconds(bannedUntilMs - ctx.nowMs) },
      ),
    );
  }

  serverError(ctx: RequestContext, status: number): Reply {
    return status === 503
      ? this.error(ctx, status, -1008, 'Service Unavailable.')
      : this.error(ctx, status, -1001, 'Internal error; unable to process your request. Please try again.');
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {
    this.instruments = undefined;
    this.exchangeInfoTail = undefined;
  }

  private klines(ctx: RequestContext): Reply {
    const q = ctx.query;
    const instrument = this.instrument(ctx);
    if ('status' in instrument) return instrument;
    const interval = q.get('interval');
    if (!interval) return this.missing(ctx, 'interval');
    if (!isTimeframe(interval)) return this.error(ctx, 400, -1120, 'Invalid interval.');
    const startTime = optionalInt(q.get('startTime'));
    const endTime = optionalInt(q.get('endTime'));
    const limitParam = optionalInt(q.get('limit'));
    if (startTime === null) return this.illegal(ctx, 'startTime');
    if (endTime === null) return this.illegal(ctx, 'endTime');
    if (limitParam === null || (limitParam !== undefined && limitParam < 1)) return this.illegal(ctx, 'limit');
    const limit = Math.min(limitParam ?? KLINES_DEFAULT_LIMIT, KLINES_MAX_LIMIT);
    const lenMs = timeframeMs(interval);
    // closed candles only: the newest one served closed at or before now
    const last = Math.min(lastClosedOpenTime(ctx.nowMs, interval), endTime ?? Number.POSITIVE_INFINITY);
    const holes = ctx.settings.holes;
    const pair = instrument.pair;
    const times: number[] = [];
    if (startTime !== undefined) {
      let t = alignDown(startTime, interval);
      if (t < startTime) t += lenMs;
      for (; t <= last && times.length < limit; t += lenMs) {
        if (!isHole('binance', pair, interval, t, ctx.seed, holes)) times.push(t);
      }
    } else {
      for (let t = alignDown(last, interval); times.length < limit && t >= 0; t -= lenMs) {
        if (!isHole('binance', pair, interval, t, ctx.seed, holes)) times.push(t);
      }
      times.reverse();
    }
    // Keyed by the candles served, not the request: a page asked without endTime stays cached as now moves on.
    const key = `${pair}|${interval}|${times[0]}|${times.at(-1)}|${times.length}|${ctx.seed}|${holes === undefined ? '' : JSON.stringify(holes)}`;
    const cached = this.klinesBodies.get(key);
    if (cached !== undefined) {
      // Most recently used last, so the oldest goes first.
      this.klinesBodies.delete(key);
      this.klinesBodies.set(key, cached);
      return this.ok(ctx, cached);
    }
    let body = '[';
    for (let i = 0; i < times.length; i++) {
      const c = candleValuesAt('binance', pair, interval, times[i] ?? 0, ctx.seed);
      const quote = c.volume * c.vwap;
      body +=
        `${i === 0 ? '' : ','}[${c.openTime},"${c.open.toFixed(8)}","${c.high.toFixed(8)}","${c.low.toFixed(8)}","${c.close.toFixed(8)}",` +
        `"${c.volume.toFixed(8)}",${c.closeTime},"${quote.toFixed(8)}",${c.trades},"${c.takerBuyVolume.toFixed(8)}",` +
        `"${(c.takerBuyVolume * c.vwap).toFixed(8)}","0"]`;
    }
    body += ']';
    this.klinesBodies.set(key, body);
    if (this.klinesBodies.size > KLINES_BODIES_KEPT) this.klinesBodies.delete(this.klinesBodies.keys().next().value!);
    return this.ok(ctx, body);
  }

  private depth(ctx: RequestContext): Reply {
    const instrument = this.instrument(ctx);
    if ('status' in instrument) return instrument;
    const raw = ctx.query.get('limit');
    const limit = raw === null ? DEPTH_DEFAULT_LIMIT : optionalInt(raw);
    if (typeof limit !== 'number' || limit < 5 || limit > 5000) {
      return this.error(ctx, 400, -1100, "Illegal characters found in parameter 'limit'; legal range is '5..5000'.");
    }
    // the book the WebSocket diff streams describe (binance-ws-market.ts), so the local-order-book procedure works
    return this.ok(ctx, binanceDepthSnapshot(instrument.pair, ctx.nowMs, ctx.seed, limit));
  }

  /**
   * Best bid and ask with their quantities, of the book `/depth` serves: one object for `symbol`, an
   * array for `symbols` (a JSON array, in the order asked) or for every symbol. One unknown symbol
   * fails the whole request (-1121), as Binance answers.
   */
  private bookTicker(ctx: RequestContext): Reply {
    const one = ctx.query.get('symbol');
    const many = ctx.query.get('symbols');
    if (one !== null && many !== null) return this.error(ctx, 400, -1128, 'Combination of optional parameters invalid.');
    const map = this.instrumentMap(ctx);
    let names: string[];
    if (one !== null) names = [one];
    else if (many !== null) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(many);
      } catch {
        parsed = undefined;
      }
      if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((x) => typeof x === 'string' && x !== '')) {
        return this.error(
          ctx,
          400,
          -1100,
          'Illegal characters found in parameter \'symbols\'; legal range is \'^\\[("[A-Z0-9-_.]{1,20}"(,"[A-Z0-9-_.]{1,20}"){0,}){0,1}\\]$\'.',
        );
      }
      names = parsed as string[];
    } else names = [...map.keys()];
    const out: string[] = [];
    for (const name of names) {
      const i = map.get(name);
      if (!i) return this.error(ctx, 400, -1121, 'Invalid symbol.');
      const top = JSON.parse(binanceDepthSnapshot(`${i.baseAsset}/${i.quoteAsset}`, ctx.nowMs, ctx.seed, 1)) as { bids: string[][]; asks: string[][] };
      const [bid, ask] = [top.bids[0] ?? ['0.00000000', '0.00000000'], top.asks[0] ?? ['0.00000000', '0.00000000']];
      out.push(JSON.stringify({ symbol: name, bidPrice: bid[0], bidQty: bid[1], askPrice: ask[0], askQty: ask[1] }));
    }
    return this.ok(ctx, one !== null ? out[0]! : `[${out.join(',')}]`);
  }

  private trades(ctx: RequestContext, pick: (pair: string, query: URLSearchParams, nowMs: number, seed: number) => TradesResult): Reply {
    const instrument = this.instrument(ctx);
    if ('status' in instrument) return instrument;
    const result = pick(instrument.pair, ctx.query, ctx.nowMs, ctx.seed);
    return 'body' in result ? this.ok(ctx, result.body) : this.error(ctx, result.status, result.code, result.msg);
  }

  private exchangeInfo(ctx: RequestContext): Reply {
    if (this.exchangeInfoTail === undefined) {
      const { windowMs, limit } = ctx.limit;
      const rateLimits = [{ rateLimitType: 'REQUEST_WEIGHT', ...interval(windowMs), limit }, ...FIXED_RATE_LIMITS];
      const symbols = [...this.instrumentMap(ctx).values()].map((i) => ({
        symbol: i.symbol,
        status: 'TRADING',
        baseAsset: i.baseAsset,
        baseAssetPrecision: 8,
        quoteAsset: i.quoteAsset,
        quotePrecision: 8,
        quoteAssetPrecision: 8,
        baseCommissionPrecision: 8,
        quoteCommissionPrecision: 8,
        orderTypes: ['LIMIT', 'LIMIT_MAKER', 'MARKET', 'STOP_LOSS', 'STOP_LOSS_LIMIT', 'TAKE_PROFIT', 'TAKE_PROFIT_LIMIT'],
        icebergAllowed: true,
        ocoAllowed: true,
        otoAllowed: true,
        quoteOrderQtyMarketAllowed: true,
        allowTrailingStop: true,
        cancelReplaceAllowed: true,
        amendAllowed: true,
        isSpotTradingAllowed: true,
        isMarginTradingAllowed: false,
        filters: symbolFilters(`${i.baseAsset}/${i.quoteAsset}`, ctx.seed),
        permissions: [],
        permissionSets: [['SPOT']],
        defaultSelfTradePreventionMode: 'EXPIRE_MAKER',
        allowedSelfTradePreventionModes: ['EXPIRE_TAKER', 'EXPIRE_MAKER', 'EXPIRE_BOTH', 'DECREMENT'],
      }));
      this.exchangeInfoTail = `,"rateLimits":${JSON.stringify(rateLimits)},"exchangeFilters":[],"symbols":${JSON.stringify(symbols)}}`;
    }
    return this.ok(ctx, `{"timezone":"UTC","serverTime":${ctx.nowMs}${this.exchangeInfoTail}`);
  }

  private instrumentMap(ctx: RequestContext): Map<string, BinanceInstrument> {
    const pairs = ctx.settings.symbols ?? DEFAULT_BINANCE_SYMBOLS;
    if (this.instruments && pairs === this.instrumentsOf) return this.instruments;
    this.instrumentsOf = pairs;
    const key = pairs.join(',');
    if (!this.instruments || key !== this.instrumentsKey) {
      this.instruments = new Map(pairs.map((p) => [binanceInstrument(p).symbol, binanceInstrument(p)]));
      this.instrumentsKey = key;
      this.exchangeInfoTail = undefined;
    }
    return this.instruments;
  }

  private instrument(ctx: RequestContext): { pair: string } | Reply {
    const symbol = ctx.query.get('symbol');
    if (!symbol) return this.missing(ctx, 'symbol');
    const i = this.instrumentMap(ctx).get(symbol);
    if (!i) return this.error(ctx, 400, -1121, 'Invalid symbol.');
    return { pair: `${i.baseAsset}/${i.quoteAsset}` };
  }

  private ok(ctx: RequestContext, body: string): Reply {
    return this.withWeight(ctx, { status: 200, headers: {}, body });
  }

  private missing(ctx: RequestContext, param: string): Reply {
    return this.error(ctx, 400, -1102, `Mandatory parameter '${param}' was not sent, was empty/null, or malformed.`);
  }

  private illegal(ctx: RequestContext, param: string): Reply {
    return this.error(ctx, 400, -1100, `Illegal characters found in parameter '${param}'; legal range is '^[0-9]{1,20}$'.`);
  }

  private error(ctx: RequestContext, status: number, code: number, msg: string): Reply {
    return this.withWeight(ctx, jsonReply(status, { code, msg }));
  }

  /** Every Binance answer reports the weight used in the current window, 429s and 418s included. */
  private withWeight(ctx: RequestContext, reply: Reply): Reply {
    reply.headers['X-MBX-USED-WEIGHT-1M'] = String(ctx.usedWeight());
    return reply;
  }
}

/** A window as exchangeInfo states it (Binance's intervals are SECOND, MINUTE and DAY): whole days or minutes where it divides, else seconds. */
function interval(windowMs: number): { interval: string; intervalNum: number } {
  for (const [name, ms] of [
    ['DAY', 86_400_000],
    ['MINUTE', 60_000],
  ] as const) {
    if (windowMs % ms === 0) return { interval: name, intervalNum: windowMs / ms };
  }
  return { interval: 'SECOND', intervalNum: Math.max(1, Math.round(windowMs / 1000)) };
}

/** `1 MINUTE`, as the -1003 message words the window. */
function intervalText(windowMs: number): string {
  const i = interval(windowMs);
  return `${i.intervalNum} ${i.interval}`;
}

/**
 * The symbol's filters, the set a spot symbol carries today. PRICE_FILTER's tick is the emulated
 * price grid (klines and depth prices sit on it); LOT_SIZE's step is the depth quantities' grid.
 */
function symbolFilters(pair: string, seed: number): unknown[] {
  const tick = (10 ** -priceDecimals('binance', pair, seed)).toFixed(8);
  return [
    { filterType: 'PRICE_FILTER', minPrice: tick, maxPrice: '1000000.00000000', tickSize: tick },
    { filterType: 'LOT_SIZE', minQty: '0.00001000', maxQty: '9000.00000000', stepSize: '0.00001000' },
    { filterType: 'ICEBERG_PARTS', limit: 10 },
    { filterType: 'MARKET_LOT_SIZE', minQty: '0.00000000', maxQty: '100.00000000', stepSize: '0.00000000' },
    { filterType: 'TRAILING_DELTA', minTrailingAboveDelta: 10, maxTrailingAboveDelta: 2000, minTrailingBelowDelta: 10, maxTrailingBelowDelta: 2000 },
    { filterType: 'PERCENT_PRICE_BY_SIDE', bidMultiplierUp: '5', bidMultiplierDown: '0.2', askMultiplierUp: '5', askMultiplierDown: '0.2', avgPriceMins: 5 },
    { filterType: 'NOTIONAL', minNotional: '5.00000000', applyMinToMarket: true, maxNotional: '9000000.00000000', applyMaxToMarket: false, avgPriceMins: 5 },
    { filterType: 'MAX_NUM_ORDERS', maxNumOrders: 200 },
    { filterType: 'MAX_NUM_ALGO_ORDERS', maxNumAlgoOrders: 5 },
  ];
}

/** Depth weight by `limit`: 1-100 -> 5, 101-500 -> 25, 501-1000 -> 50, 1001-5000 -> 250. */
export function depthWeight(limitParam: string | null): number {
  const limit = limitParam === null ? DEPTH_DEFAULT_LIMIT : Number(limitParam);
  if (!Number.isInteger(limit) || limit <= 100) return 5;
  if (limit <= 500) return 25;
  if (limit <= 1000) return 50;
  return 250;
}

/** undefined when absent, null when present but not a non-negative integer. */
function optionalInt(value: string | null): number | undefined | null {
  if (value === null || value === '') return undefined;
  if (!/^\d{1,20}$/.test(value)) return null;
  return Number(value);
}
