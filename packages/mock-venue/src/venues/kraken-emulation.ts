import { alignDown, timeframeMs, type Timeframe } from '@tickfleet/core';
import { candleValuesAt, isHole } from '../data/candles.js';
import { KRAKEN_PAIRS, type KrakenPair } from '../data/kraken-pairs.js';
import { jsonReply, malformJson, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { KRAKEN_QTY_DECIMALS, krakenModel } from './kraken-ws-emulation.js';
import { ServedBooks } from './served-books.js';
import { lastClosedTick, STREAM_TICK_MS, type ModelTrade } from './stream-book-model.js';

/** OHLC `interval` (minutes) -> timeframe; Kraken's 21600 (15 days) has no tickfleet timeframe and is refused. */
const OHLC_INTERVALS: ReadonlyMap<string, Timeframe> = new Map([
  ['1', '1m'],
  ['5', '5m'],
  ['15', '15m'],
  ['30', '30m'],
  ['60', '1h'],
  ['240', '4h'],
  ['1440', '1d'],
  ['10080', '1w'],
]);
/** Kraken keeps the 720 most recent entries of each interval; `since` cannot reach further back. */
export const KRAKEN_OHLC_ENTRIES = 720;
/** `Trades` answers at most 1000 trades (`count`). */
export const KRAKEN_MAX_TRADES = 1000;
const DEPTH_DEFAULT_COUNT = 100;
const DEPTH_MAX_COUNT = 500;

/** What `Assets` says of each asset the pairs use: altname, decimals, display_decimals. */
const ASSETS: Readonly<Record<string, [altname: string, decimals: number, display: number]>> = {
  XXBT: ['XBT', 10, 5],
  ZUSD: ['USD', 4, 2],
  ZEUR: ['EUR', 4, 2],
  XETH: ['ETH', 10, 5],
  SOL: ['SOL', 10, 5],
  XXRP: ['XRP', 8, 5],
  ADA: ['ADA', 8, 6],
  XXDG: ['XDG', 8, 2],
  DOT: ['DOT', 10, 8],
  XLTC: ['LTC', 10, 5],
  LINK: ['LINK', 10, 5],
};

const TAKER_FEES = [
  [0, 0.4],
  [10000, 0.35],
  [50000, 0.24],
  [100000, 0.22],
  [250000, 0.2],
  [500000, 0.18],
  [1000000, 0.16],
  [2500000, 0.14],
  [5000000, 0.12],
  [10000000, 0.1],
];
const MAKER_FEES = [
  [0, 0.25],
  [10000, 0.2],
  [50000, 0.14],
  [100000, 0.12],
  [250000, 0.1],
  [500000, 0.08],
  [1000000, 0.06],
  [2500000, 0.04],
  [5000000, 0.02],
  [10000000, 0],
];

/**
 * Kraken spot REST market data (`/0/public/*`, docs.kraken.com "Spot REST"): OHLC (the 720 most recent
 * entries, the last one the open frame), Trades (by `since`, seconds or the nanosecond `last` cursor),
 * Depth, AssetPairs (with each pair's `pair_decimals`), Assets, Time and SystemStatus. Every answer is
 * `{"error":[...],"result":...}`; API errors come as HTTP 200 with the error array, as Kraken sends them
 * (`EAPI:Rate limit exceeded` when the call counter is full, `EQuery:Unknown asset pair`). Trades and
 * Depth come from the same instrument model as the `/kraken/v2` WebSocket, so REST heals stream holes.
 */
export class KrakenEmulation implements VenueEmulation {
  private readonly byName = new Map<string, KrakenPair>();
  private assetPairsBody: string | undefined;
  /** Every Depth answer since reset. */
  readonly servedBooks = new ServedBooks();

  constructor() {
    for (const p of KRAKEN_PAIRS) for (const name of [p.id, p.altname, p.wsname, p.symbol]) this.byName.set(name, p);
  }

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET' && ctx.method !== 'POST') return this.error(405, 'EGeneral:Invalid arguments');
    // Every public call adds 1 to the call counter.
    switch (ctx.path) {
      case '/0/public/OHLC':
        return { weight: 1, handle: () => this.ohlc(ctx) };
      case '/0/public/Trades':
        return { weight: 1, handle: () => this.trades(ctx) };
      case '/0/public/Depth':
        return { weight: 1, handle: () => this.depth(ctx) };
      case '/0/public/AssetPairs':
        return { weight: 1, handle: () => this.ok(this.assetPairs()) };
      case '/0/public/Assets':
        return { weight: 1, handle: () => this.ok(assets()) };
      case '/0/public/Time':
        return {
          weight: 1,
          handle: () => this.ok(`{"unixtime":${Math.floor(ctx.nowMs / 1000)},"rfc1123":"${new Date(ctx.nowMs).toUTCString().replace('GMT', '+0000')}"}`),
        };
      case '/0/public/SystemStatus':
        return { weight: 1, handle: () => this.ok(`{"status":"online","timestamp":"${new Date(ctx.nowMs).toISOString().slice(0, 19)}Z"}`) };
      default:
        return this.error(404, 'EGeneral:Unknown method');
    }
  }

  /** The counter is full: Kraken answers 200 with the error array (its clients read the body, not the status). */
  tooManyRequests(): Reply {
    return this.error(200, 'EAPI:Rate limit exceeded');
  }

  banned(): Reply {
    return this.error(200, 'EGeneral:Temporary lockout');
  }

  serverError(_ctx: RequestContext, status: number): Reply {
    return this.error(status, status === 503 ? 'EService:Unavailable' : status === 502 ? 'EService:Busy' : 'EGeneral:Internal error');
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {
    this.assetPairsBody = undefined;
  }

  reset(): void {
    this.servedBooks.reset();
  }

  private pair(ctx: RequestContext): KrakenPair | Reply {
    const name = ctx.query.get('pair');
    if (!name) return this.error(200, 'EGeneral:Invalid arguments');
    return this.byName.get(name) ?? this.error(200, 'EQuery:Unknown asset pair');
  }

  private ohlc(ctx: RequestContext): Reply {
    const pair = this.pair(ctx);
    if (!isPair(pair)) return pair;
    const timeframe = OHLC_INTERVALS.get(ctx.query.get('interval') ?? '1');
    if (timeframe === undefined) return this.error(200, 'EGeneral:Invalid arguments');
    const since = optionalInt(ctx.query.get('since'));
    if (since === null) return this.error(200, 'EGeneral:Invalid arguments:since');
    const lenMs = timeframeMs(timeframe);
    const open = alignDown(ctx.nowMs, timeframe);
    const oldest = open - (KRAKEN_OHLC_ENTRIES - 1) * lenMs;
    let first = oldest;
    // entries strictly after `since` (seconds)
    if (since !== undefined) first = Math.max(oldest, alignDown(since * 1000, timeframe) + lenMs);
    const rows: string[] = [];
    const d = pair.pairDecimals;
    for (let t = first; t <= open; t += lenMs) {
      if (t < open && isHole('kraken', pair.symbol, timeframe, t, ctx.seed, ctx.settings.holes)) continue;
      const c = candleValuesAt('kraken', pair.symbol, timeframe, t, ctx.seed);
      rows.push(
        `[${t / 1000},"${c.open.toFixed(d)}","${c.high.toFixed(d)}","${c.low.toFixed(d)}","${c.close.toFixed(d)}","${c.vwap.toFixed(d)}","${c.volume.toFixed(8)}",${c.trades}]`,
      );
    }
    return this.ok(`{"${pair.id}":[${rows.join(',')}],"last":${(open - lenMs) / 1000}}`);
  }

  private trades(ctx: RequestContext): Reply {
    const pair = this.pair(ctx);
    if (!isPair(pair)) return pair;
    const rawCount = optionalInt(ctx.query.get('count'));
    if (rawCount === null || rawCount === 0) return this.error(200, 'EGeneral:Invalid arguments:count');
    const count = Math.min(rawCount ?? KRAKEN_MAX_TRADES, KRAKEN_MAX_TRADES);
    const rawSince = ctx.query.get('since');
    const model = krakenModel(pair.symbol, ctx.seed);
    const lastId = model.lastTradeId(lastClosedTick(ctx.nowMs));
    let trades: ModelTrade[];
    if (rawSince === null || rawSince === '') {
      trades = model.tradesBetween(Math.max(1, lastId - count + 1), lastId);
    } else {
      if (!/^\d{1,20}$/.test(rawSince)) return this.error(200, 'EGeneral:Invalid arguments:since');
      // Seconds (up to 10 digits) include trades from that second on; the nanosecond `last` cursor is exclusive.
      const ns = rawSince.length <= 10 ? BigInt(rawSince) * 1_000_000_000n - 1n : BigInt(rawSince);
      const afterMs = Number(ns / 1_000_000n);
      const tick = Math.floor(afterMs / STREAM_TICK_MS);
      const first = model.lastTradeId(tick - 1) + 1;
      trades = [];
      for (let from = first; from <= lastId && trades.length < count; from += count) {
        for (const t of model.tradesBetween(from, Math.min(lastId, from + count - 1))) {
          if (BigInt(t.timeMs) * 1_000_000n > ns && trades.length < count) trades.push(t);
        }
      }
    }
    const rows = trades.map(
      (t) =>
        `["${model.formatPrice(t.priceTicks)}","${model.formatQty(t.qtyUnits, KRAKEN_QTY_DECIMALS)}",${(t.timeMs / 1000).toFixed(4)},"${t.buyerMaker ? 's' : 'b'}","${t.id % 3 === 0 ? 'l' : 'm'}","",${t.id}]`,
    );
    const lastTrade = trades.at(-1);
    const last = lastTrade ? `${lastTrade.timeMs}000000` : (rawSince ?? `${ctx.nowMs}000000`);
    return this.ok(`{"${pair.id}":[${rows.join(',')}],"last":"${last}"}`);
  }

  private depth(ctx: RequestContext): Reply {
    const pair = this.pair(ctx);
    if (!isPair(pair)) return pair;
    const raw = optionalInt(ctx.query.get('count'));
    if (raw === null || (raw !== undefined && (raw < 1 || raw > DEPTH_MAX_COUNT))) return this.error(200, 'EGeneral:Invalid arguments:count');
    const model = krakenModel(pair.symbol, ctx.seed);
    const tick = lastClosedTick(ctx.nowMs);
    const book = model.levels(tick, raw ?? DEPTH_DEFAULT_COUNT);
    this.servedBooks.add({ atMs: ctx.nowMs, symbol: pair.symbol, tick });
    const ts = Math.floor(((tick + 1) * STREAM_TICK_MS) / 1000);
    const side = (levels: Array<[number, number]>): string =>
      `[${levels.map(([p, q]) => `["${model.formatPrice(p)}","${model.formatQty(q)}",${ts}]`).join(',')}]`;
    return this.ok(`{"${pair.id}":{"asks":${side(book.asks)},"bids":${side(book.bids)}}}`);
  }

  private assetPairs(): string {
    this.assetPairsBody ??= JSON.stringify(
      Object.fromEntries(
        KRAKEN_PAIRS.map((p) => [
          p.id,
          {
            altname: p.altname,
            wsname: p.wsname,
            aclass_base: 'currency',
            base: p.base,
            aclass_quote: 'currency',
            quote: p.quote,
            lot: 'unit',
            cost_decimals: p.costDecimals,
            pair_decimals: p.pairDecimals,
            lot_decimals: p.lotDecimals,
            lot_multiplier: 1,
            leverage_buy: [],
            leverage_sell: [],
            fees: TAKER_FEES,
            fees_maker: MAKER_FEES,
            fee_volume_currency: 'ZUSD',
            margin_call: 80,
            margin_stop: 40,
            ordermin: p.ordermin,
            costmin: p.costmin,
            tick_size: (10 ** -p.pairDecimals).toFixed(p.pairDecimals),
            status: 'online',
          },
        ]),
      ),
    );
    return this.assetPairsBody;
  }

  private ok(result: string): Reply {
    return { status: 200, headers: {}, body: `{"error":[],"result":${result}}` };
  }

  private error(status: number, message: string): Reply {
    return jsonReply(status, { error: [message] });
  }
}

function assets(): string {
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(ASSETS).map(([id, [altname, decimals, display]]) => [
        id,
        { aclass: 'currency', altname, decimals, display_decimals: display, collateral_value: 1, status: 'enabled' },
      ]),
    ),
  );
}

function isPair(value: KrakenPair | Reply): value is KrakenPair {
  return 'pairDecimals' in value;
}

/** undefined when absent, null when present but not a non-negative integer. */
function optionalInt(value: string | null): number | undefined | null {
  if (value === null || value === '') return undefined;
  if (!/^\d{1,20}$/.test(value)) return null;
  return Number(value);
}
