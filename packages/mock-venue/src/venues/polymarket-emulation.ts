import { bookAt } from '../data/books.js';
import { DEFAULT_POLYMARKET_MARKETS, marketTokenIds, polymarketMarkets, type PolymarketMarket } from '../data/markets.js';
import { createHash } from 'node:crypto';
import { unitFloat } from '../data/random.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { POLYMARKET_MAX_BOOKS_PER_REQUEST } from '../scenario.js';

/** `POST /books` requests the ground-truth log keeps (the oldest go first). */
const BOOK_LOG_REQUESTS = 100_000;

/** One answered order-book request (`GET /book` or `POST /books`): when it was served and the tokens it asked for. */
export interface BookRequestRecord {
  atMs: number;
  path: '/book' | '/books';
  tokens: string[];
}

const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;

interface Catalogue {
  key: string;
  markets: PolymarketMarket[];
  /** token id -> its market's book metadata */
  tokens: Map<string, TokenMarket>;
  /** token id -> Gamma id of its market */
  marketIds: Map<string, string>;
}

interface TokenMarket {
  conditionId: string;
  tickSize: string;
  negRisk: boolean;
}

/**
 * Polymarket: Gamma discovery (`GET /markets`), the CLOB book (`GET /book?token_id=`) and the CLOB
 * batch (`POST /books`, body `[{"token_id": …}, …]`, at most 500 per request), all under
 * `/polymarket`, each with its own documented limit (Gamma `/markets` 300, CLOB `/book` 1500, CLOB
 * `/books` 500 requests per sliding 10 s, a `/books` request counting 1 whatever its size;
 * docs.polymarket.com/api-reference/rate-limits). A batch answers the books it has, in the order asked;
 * a token without a book (unknown, resolved market, or one of the scenario's `failingBooks`) is left
 * out of the answer rather than failing the request. Books follow the CLOB's order: bids
 * ascending and asks descending, best level last, with every field of the CLOB's `OrderBookSummary`
 * (as typed by @polymarket/clob-client) and its `hash`: the SHA-1 of the summary's JSON with `hash`
 * empty, which the client's `getOrderBookHash` recomputes.
 */
export class PolymarketEmulation implements VenueEmulation {
  private catalogue: Catalogue | undefined;
  private bookLog: BookRequestRecord[] = [];

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method === 'POST' && ctx.path === '/books') return { weight: 1, limitGroup: 'books', handle: () => this.books(ctx) };
    if (ctx.method !== 'GET') return jsonReply(405, { error: 'Method Not Allowed' });
    if (ctx.path === '/markets') return { weight: 1, limitGroup: 'gamma', handle: () => this.markets(ctx) };
    if (ctx.path === '/book') return { weight: 1, handle: () => this.book(ctx) };
    return jsonReply(404, { error: 'Not Found' });
  }

  /** Every book request served since reset, oldest first (ground truth of who polled what, when). */
  bookRequests(): readonly BookRequestRecord[] {
    return this.bookLog;
  }

  reset(): void {
    this.bookLog = [];
  }

  tooManyRequests(_ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    return jsonReply(429, { error: 'Too Many Requests' }, cause === 'storm' ? { 'Retry-After': retryAfterSeconds(retryAfterMs) } : {});
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0, 'limit');
  }

  serverError(_ctx: RequestContext, status: number): Reply {
    return jsonReply(status, { error: status === 503 ? 'Service Unavailable' : 'Internal Server Error' });
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {
    this.catalogue = undefined;
  }

  private markets(ctx: RequestContext): Reply {
    const q = ctx.query;
    const limit = Math.min(intParam(q.get('limit'), DEFAULT_PAGE), MAX_PAGE);
    const offset = intParam(q.get('offset'), 0);
    const active = boolParam(q.get('active'));
    const closed = boolParam(q.get('closed'));
    if (limit < 0 || offset < 0 || active === null || closed === null) return jsonReply(400, { error: 'Invalid query parameters' });
    const hidden = new Set(ctx.settings.hiddenMarkets ?? []);
    const selected = this.catalogueFor(ctx)
      .markets.filter((m) => !hidden.has(m.id))
      .map((m) => withEnd(m, ctx))
      .filter((m) => (active === undefined || m.active === active) && (closed === undefined || m.closed === closed));
    return { ...jsonReply(200, selected.slice(offset, offset + limit)), delayMs: ctx.settings.listingDelayMs ?? 0 };
  }

  private book(ctx: RequestContext): Reply {
    const token = ctx.query.get('token_id');
    // The CLOB's answer for a missing or non-numeric token id (docs.polymarket.com/resources/error-codes).
    if (!token || !/^\d+$/.test(token)) return jsonReply(400, { error: 'Invalid token id' });
    this.logBooks(ctx, '/book', [token]);
    const summary = this.summary(ctx, token);
    if (summary === 'none') return jsonReply(404, { error: 'No orderbook exists for the requested token id' });
    if (summary === 'failing') return this.serverError(ctx, 500);
    return jsonReply(200, summary);
  }

  private books(ctx: RequestContext): Reply {
    let params: unknown;
    try {
      params = JSON.parse(ctx.body);
    } catch {
      return jsonReply(400, { error: 'Invalid payload' });
    }
    if (!Array.isArray(params) || params.length === 0 || params.length > POLYMARKET_MAX_BOOKS_PER_REQUEST) return jsonReply(400, { error: 'Invalid payload' });
    const tokens: string[] = [];
    for (const p of params as unknown[]) {
      const token = (p as { token_id?: unknown } | null)?.token_id;
      if (typeof token !== 'string' || token === '') return jsonReply(400, { error: 'Invalid payload' });
      tokens.push(token);
    }
    this.logBooks(ctx, '/books', tokens);
    const out: object[] = [];
    for (const token of tokens) {
      const summary = this.summary(ctx, token);
      if (typeof summary === 'object') out.push(summary);
    }
    return jsonReply(200, out);
  }

  private logBooks(ctx: RequestContext, path: BookRequestRecord['path'], tokens: string[]): void {
    if (this.bookLog.length >= BOOK_LOG_REQUESTS) this.bookLog.splice(0, this.bookLog.length - BOOK_LOG_REQUESTS + 1);
    this.bookLog.push({ atMs: ctx.nowMs, path, tokens });
  }

  /** One token's `OrderBookSummary` now, or why there is none. */
  private summary(ctx: RequestContext, token: string): object | 'none' | 'failing' {
    const catalogue = this.catalogueFor(ctx);
    const market = catalogue.tokens.get(token);
    const endMs = market === undefined ? undefined : ctx.settings.marketEnds?.[catalogue.marketIds.get(token) ?? ''];
    // A market past its scenario end is resolved: the CLOB has no book for its tokens any more.
    if (!market || (endMs !== undefined && ctx.nowMs >= endMs)) return 'none';
    if (ctx.settings.failingBooks?.includes(token)) return 'failing';
    const snap = bookAt('polymarket', token, ctx.settings.idleBooks?.includes(token) ? 0 : ctx.nowMs, ctx.seed);
    const bids = snap.bids.map(([price, size]) => ({ price, size })).reverse();
    const asks = snap.asks.map(([price, size]) => ({ price, size })).reverse();
    // the last trade printed at the touch, on a side the book's second decides
    const touch = unitFloat('pm-last', token, Math.floor(ctx.nowMs / 1000), ctx.seed) < 0.5 ? bids.at(-1) : asks.at(-1);
    const body = {
      market: market.conditionId,
      asset_id: token,
      timestamp: String(ctx.nowMs),
      hash: '',
      bids,
      asks,
      min_order_size: '5',
      tick_size: market.tickSize,
      neg_risk: market.negRisk,
      last_trade_price: touch?.price ?? '0.5',
    };
    body.hash = createHash('sha1').update(JSON.stringify(body)).digest('hex');
    return body;
  }

  private catalogueFor(ctx: RequestContext): Catalogue {
    const count = ctx.settings.markets ?? DEFAULT_POLYMARKET_MARKETS;
    const key = `${ctx.seed}:${count}`;
    if (this.catalogue?.key !== key) {
      const markets = polymarketMarkets(ctx.seed, count);
      const tokens = new Map<string, TokenMarket>();
      const marketIds = new Map<string, string>();
      for (const m of markets) {
        // Most CLOB markets quote in cents; about one in four (long shots) in tenths of a cent. Cent prices are valid on both.
        const meta = {
          conditionId: m.conditionId,
          tickSize: unitFloat('pm-tick', m.id, ctx.seed) < 0.25 ? '0.001' : '0.01',
          negRisk: unitFloat('pm-neg', m.id, ctx.seed) < 0.3,
        };
        for (const t of marketTokenIds(m)) {
          tokens.set(t, meta);
          marketIds.set(t, m.id);
        }
      }
      this.catalogue = { key, markets, tokens, marketIds };
    }
    return this.catalogue;
  }
}

/** The market with its scenario end (`marketEnds`) applied: the end date replaced, and closed once it has passed. */
function withEnd(market: PolymarketMarket, ctx: RequestContext): PolymarketMarket {
  const endMs = ctx.settings.marketEnds?.[market.id];
  if (endMs === undefined) return market;
  return { ...market, endDate: new Date(endMs).toISOString(), closed: market.closed || ctx.nowMs >= endMs };
}

function intParam(value: string | null, fallback: number): number {
  if (value === null || value === '') return fallback;
  return /^\d{1,9}$/.test(value) ? Number(value) : -1;
}

function boolParam(value: string | null): boolean | undefined | null {
  if (value === null || value === '') return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return null;
}
