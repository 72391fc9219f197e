import { alignDown, type Timeframe } from '@tickfleet/core';
import { candleValuesAt, isHole, priceDecimals } from '../data/candles.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { ServedBooks } from './served-books.js';
import { lastClosedTick, STREAM_TICK_MS, streamModel, type StreamBookModel } from './stream-book-model.js';

/** Products the Coinbase emulation lists (`BASE-QUOTE`). */
export const DEFAULT_COINBASE_PRODUCTS: readonly string[] = ['BTC-USD', 'ETH-USD', 'SOL-USD', 'DOGE-USD', 'BTC-EUR', 'ETH-BTC'];
/** Candles one request may span: more is a 400, not a shorter page. */
export const COINBASE_MAX_CANDLES = 300;
/** `granularity` (seconds) -> timeframe: the six Coinbase accepts. */
const GRANULARITIES: ReadonlyMap<string, Timeframe> = new Map([
  ['60', '1m'],
  ['300', '5m'],
  ['900', '15m'],
  ['3600', '1h'],
  ['21600', '6h'],
  ['86400', '1d'],
]);
const TRADES_DEFAULT_LIMIT = 100;
const TRADES_MAX_LIMIT = 1000;
/** Levels per side of a level-2 book. */
const BOOK_LEVELS = 50;
const QTY_DECIMALS = 8;

/** The model behind Coinbase's book and trades for `product` (`BTC-USD`). */
function model(product: string, seed: number): StreamBookModel {
  return coinbaseModel(product.replace('-', '/'), seed);
}

/** The Coinbase instrument model of `symbol` (`BTC/USD`): the trades and book the emulation serves (ground truth for tests). */
export function coinbaseModel(symbol: string, seed: number): StreamBookModel {
  return streamModel('coinbase', symbol, seed, QTY_DECIMALS);
}

/**
 * Coinbase Exchange public market data (docs.cdp.coinbase.com, Exchange REST API): `/products`,
 * `/products/{id}`, `/products/{id}/candles` (`[time, low, high, open, close, volume]`, newest first;
 * `start`/`end` ISO 8601 both inclusive; more than 300 candles is a 400; without both the newest 300;
 * the open candle included), `/products/{id}/trades` (newest first, paged by trade id with `before`/`after`
 * and the `CB-BEFORE`/`CB-AFTER` headers), `/products/{id}/book?level=1|2`, `/currencies` and `/time`.
 * Errors are `{"message": …}`; the public limit refuses with 429.
 */
export class CoinbaseEmulation implements VenueEmulation {
  /** Every book answer since reset. */
  readonly servedBooks = new ServedBooks();

  reset(): void {
    this.servedBooks.reset();
  }

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET') return this.error(404, 'NotFound');
    const p = ctx.path;
    if (p === '/products')
      return {
        weight: 1,
        handle: () =>
          jsonReply(
            200,
            DEFAULT_COINBASE_PRODUCTS.map((id) => product(id, ctx.seed)),
          ),
      };
    if (p === '/currencies') return { weight: 1, handle: () => jsonReply(200, currencies()) };
    if (p === '/time') return { weight: 1, handle: () => jsonReply(200, { iso: new Date(ctx.nowMs).toISOString(), epoch: ctx.nowMs / 1000 }) };
    const m = /^\/products\/([A-Z0-9]+-[A-Z0-9]+)(\/candles|\/trades|\/book)?$/.exec(p);
    if (!m) return this.error(404, 'NotFound');
    const id = m[1]!;
    const known = DEFAULT_COINBASE_PRODUCTS.includes(id);
    switch (m[2]) {
      case undefined:
        return { weight: 1, handle: () => (known ? jsonReply(200, product(id, ctx.seed)) : this.error(404, 'NotFound')) };
      case '/candles':
        return { weight: 1, handle: () => (known ? this.candles(ctx, id) : this.error(404, 'NotFound')) };
      case '/trades':
        return { weight: 1, handle: () => (known ? this.trades(ctx, id) : this.error(404, 'NotFound')) };
      default:
        return { weight: 1, handle: () => (known ? this.book(ctx, id) : this.error(404, 'NotFound')) };
    }
  }

  tooManyRequests(_ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    const reply = this.error(429, 'Public rate limit exceeded');
    if (cause === 'storm') reply.headers['Retry-After'] = retryAfterSeconds(retryAfterMs);
    return reply;
  }

  banned(): Reply {
    return this.error(429, 'Public rate limit exceeded');
  }

  serverError(_ctx: RequestContext, status: number): Reply {
    return this.error(status, status === 503 ? 'Service Unavailable' : 'Internal server error');
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {}

  private candles(ctx: RequestContext, id: string): Reply {
    const q = ctx.query;
    const timeframe = GRANULARITIES.get(q.get('granularity') ?? '60');
    if (timeframe === undefined) return this.error(400, 'Unsupported granularity');
    const g = Number(q.get('granularity') ?? '60') * 1000;
    const startRaw = q.get('start');
    const endRaw = q.get('end');
    const now = alignDown(ctx.nowMs, timeframe);
    let first = now - (COINBASE_MAX_CANDLES - 1) * g;
    let last = now;
    // Either missing: both are ignored, as Coinbase documents.
    if (startRaw && endRaw) {
      const start = Date.parse(startRaw);
      const end = Date.parse(endRaw);
      if (!Number.isFinite(start)) return this.error(400, 'start must be a valid ISO 8601 time');
      if (!Number.isFinite(end)) return this.error(400, 'end must be a valid ISO 8601 time');
      if (end < start) return this.error(400, 'start must be before end');
      first = alignDown(start, timeframe);
      if (first < start) first += g;
      last = Math.min(alignDown(end, timeframe), now);
      if (Math.floor((alignDown(end, timeframe) - first) / g) + 1 > COINBASE_MAX_CANDLES) {
        return this.error(400, 'granularity too small for the requested time range. Count of aggregations requested exceeds 300');
      }
    }
    const pair = id.replace('-', '/');
    const rows: string[] = [];
    for (let t = last; t >= first; t -= g) {
      if (isHole('coinbase', pair, timeframe, t, ctx.seed, ctx.settings.holes)) continue;
      const c = candleValuesAt('coinbase', pair, timeframe, t, ctx.seed);
      rows.push(`[${t / 1000},${c.low},${c.high},${c.open},${c.close},${c.volume}]`);
    }
    return { status: 200, headers: {}, body: `[${rows.join(',')}]` };
  }

  private trades(ctx: RequestContext, id: string): Reply {
    const q = ctx.query;
    const limitRaw = q.get('limit');
    const limit = limitRaw === null ? TRADES_DEFAULT_LIMIT : Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1) return this.error(400, 'Invalid limit');
    const n = Math.min(limit, TRADES_MAX_LIMIT);
    const mdl = model(id, ctx.seed);
    const newest = mdl.lastTradeId(lastClosedTick(ctx.nowMs));
    const after = q.get('after');
    const before = q.get('before');
    // `after`: older than that trade id; `before`: newer than it (the oldest of those first, up to limit)
    let hi = newest;
    let lo = Math.max(1, hi - n + 1);
    if (after !== null) {
      hi = Math.min(newest, Number(after) - 1);
      lo = Math.max(1, hi - n + 1);
    } else if (before !== null) {
      lo = Number(before) + 1;
      hi = Math.min(newest, lo + n - 1);
    }
    const trades = hi >= lo ? mdl.tradesBetween(lo, hi).reverse() : [];
    const body = trades.map((t) => ({
      time: new Date(t.timeMs).toISOString(),
      trade_id: t.id,
      price: mdl.formatPrice(t.priceTicks),
      size: mdl.formatQty(t.qtyUnits),
      side: t.buyerMaker ? 'buy' : 'sell',
    }));
    const headers: Record<string, string> = {};
    if (trades.length > 0) {
      headers['CB-BEFORE'] = String(trades[0]!.id);
      headers['CB-AFTER'] = String(trades.at(-1)!.id);
    }
    return jsonReply(200, body, headers);
  }

  private book(ctx: RequestContext, id: string): Reply {
    const level = ctx.query.get('level') ?? '1';
    if (level !== '1' && level !== '2') return this.error(400, 'Invalid level');
    const mdl = model(id, ctx.seed);
    const tick = lastClosedTick(ctx.nowMs);
    const book = mdl.levels(tick, level === '1' ? 1 : BOOK_LEVELS);
    this.servedBooks.add({ atMs: ctx.nowMs, symbol: id.replace('-', '/'), tick });
    const side = (levels: Array<[number, number]>): Array<[string, string, number]> =>
      levels.map(([p, qty]) => [mdl.formatPrice(p), mdl.formatQty(qty), 1 + (p % 5)]);
    return jsonReply(200, {
      bids: side(book.bids),
      asks: side(book.asks),
      sequence: tick,
      auction_mode: false,
      auction: null,
      time: new Date((tick + 1) * STREAM_TICK_MS).toISOString(),
    });
  }

  private error(status: number, message: string): Reply {
    return jsonReply(status, { message });
  }
}

function product(id: string, seed: number): Record<string, unknown> {
  const [base = '', quote = ''] = id.split('-');
  const decimals = priceDecimals('coinbase', `${base}/${quote}`, seed);
  return {
    id,
    base_currency: base,
    quote_currency: quote,
    quote_increment: (10 ** -decimals).toFixed(decimals),
    base_increment: '0.00000001',
    display_name: `${base}-${quote}`,
    min_market_funds: quote === 'BTC' ? '0.000016' : '1',
    margin_enabled: false,
    post_only: false,
    limit_only: false,
    cancel_only: false,
    status: 'online',
    status_message: '',
    trading_disabled: false,
    fx_stablecoin: false,
    max_slippage_percentage: '0.02000000',
    auction_mode: false,
    high_bid_limit_percentage: '',
  };
}

const CURRENCY_NAMES: Readonly<Record<string, [name: string, type: 'crypto' | 'fiat']>> = {
  BTC: ['Bitcoin', 'crypto'],
  ETH: ['Ethereum', 'crypto'],
  SOL: ['Solana', 'crypto'],
  DOGE: ['Dogecoin', 'crypto'],
  USD: ['United States Dollar', 'fiat'],
  EUR: ['Euro', 'fiat'],
};

function currencies(): unknown[] {
  return Object.entries(CURRENCY_NAMES).map(([id, [name, type]]) => ({
    id,
    name,
    min_size: type === 'fiat' ? '0.01' : '0.00000001',
    status: 'online',
    message: '',
    max_precision: type === 'fiat' ? '0.01' : '0.00000001',
    convertible_to: [],
    details: { type, symbol: '', network_confirmations: type === 'fiat' ? 0 : 2, sort_order: 0, push_payment_methods: [], group_types: [], display_name: name },
    default_network: type === 'fiat' ? '' : name.toLowerCase(),
    supported_networks: [],
  }));
}
