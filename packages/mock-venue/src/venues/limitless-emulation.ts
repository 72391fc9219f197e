import { bookAt } from '../data/books.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { DEFAULT_LIMITLESS_MARKETS, limitlessMarkets, type LimitlessMarket } from './limitless-markets.js';

/** The API's page-size cap on `GET /markets/active` (the official SDK: "max 25"), also its default. */
export const LIMITLESS_PAGE_LIMIT = 25;
/** Markets per `GET /markets/search` page when `limit` is not given (the emulation's choice; CCXT asks for 50). */
const SEARCH_DEFAULT_LIMIT = 10;
const ORDERBOOK_PATH = /^\/markets\/([^/]+)\/orderbook$/;

interface Catalogue {
  key: string;
  markets: LimitlessMarket[];
  /** slug -> its market, for every slug the venue knows (group parents and children included) */
  bySlug: Map<string, LimitlessMarket>;
}

/**
 * Limitless Exchange: `GET /markets/active?page=&limit=`, `GET /markets/search?query=&limit=&page=`
 * (what CCXT's Limitless client loads markets and events with) and `GET /markets/{slug}/orderbook`,
 * under `/limitless`. Error bodies follow NestJS (the API's framework): `{statusCode, message,
 * error}`, a validation failure listing its messages, and the throttler's 429 with Retry-After.
 */
export class LimitlessEmulation implements VenueEmulation {
  private catalogue: Catalogue | undefined;

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET') return notFound(ctx);
    if (ctx.path === '/markets/active') return { weight: 1, handle: () => this.active(ctx) };
    if (ctx.path === '/markets/search') return { weight: 1, handle: () => this.search(ctx) };
    const m = ORDERBOOK_PATH.exec(ctx.path);
    if (m) {
      const slug = decodeURIComponent(m[1] ?? '');
      return { weight: 1, handle: () => this.orderbook(ctx, slug) };
    }
    return notFound(ctx);
  }

  tooManyRequests(_ctx: RequestContext, retryAfterMs: number): Reply {
    return jsonReply(429, { statusCode: 429, message: 'ThrottlerException: Too Many Requests' }, { 'Retry-After': retryAfterSeconds(retryAfterMs) });
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0);
  }

  serverError(_ctx: RequestContext, status: number): Reply {
    return jsonReply(status, { statusCode: status, message: status === 503 ? 'Service Unavailable' : 'Internal server error' });
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {
    this.catalogue = undefined;
  }

  private active(ctx: RequestContext): Reply {
    const problems: string[] = [];
    const page = intParam(ctx.query.get('page'), 1);
    const limit = intParam(ctx.query.get('limit'), LIMITLESS_PAGE_LIMIT);
    if (page === undefined || page < 1) problems.push('page must not be less than 1');
    if (limit === undefined || limit < 1) problems.push('limit must not be less than 1');
    else if (limit > LIMITLESS_PAGE_LIMIT) problems.push(`limit must not be greater than ${LIMITLESS_PAGE_LIMIT}`);
    if (problems.length > 0 || page === undefined || limit === undefined) return jsonReply(400, { message: problems, error: 'Bad Request', statusCode: 400 });
    const markets = this.listed(ctx);
    return {
      ...jsonReply(200, { data: markets.slice((page - 1) * limit, page * limit), totalMarketsCount: markets.length }),
      delayMs: ctx.settings.listingDelayMs ?? 0,
    };
  }

  /** Listed markets whose title or slug (or a group child's) holds `query`, ignoring case: `{markets, totalMarketsCount}`. */
  private search(ctx: RequestContext): Reply {
    const problems: string[] = [];
    const query = (ctx.query.get('query') ?? '').trim().toLowerCase();
    const page = intParam(ctx.query.get('page'), 1);
    const limit = intParam(ctx.query.get('limit'), SEARCH_DEFAULT_LIMIT);
    if (query === '') problems.push('query should not be empty');
    if (page === undefined || page < 1) problems.push('page must not be less than 1');
    if (limit === undefined || limit < 1) problems.push('limit must not be less than 1');
    if (problems.length > 0 || page === undefined || limit === undefined) return jsonReply(400, { message: problems, error: 'Bad Request', statusCode: 400 });
    const hit = (m: LimitlessMarket): boolean => m.title.toLowerCase().includes(query) || m.slug.includes(query);
    const markets = this.listed(ctx).filter((m) => hit(m) || (m.markets ?? []).some(hit));
    return jsonReply(200, { markets: markets.slice((page - 1) * limit, page * limit), totalMarketsCount: markets.length });
  }

  /** What discovery lists: not hidden by the scenario, not expired, scenario ends applied. */
  private listed(ctx: RequestContext): LimitlessMarket[] {
    const hidden = new Set(ctx.settings.hiddenMarkets ?? []);
    return this.catalogueFor(ctx)
      .markets.filter((m) => !hidden.has(String(m.id)))
      .map((m) => withEnd(m, ctx))
      .filter((m) => !m.expired);
  }

  private orderbook(ctx: RequestContext, slug: string): Reply {
    const market = this.catalogueFor(ctx).bySlug.get(slug);
    if (!market) return jsonReply(404, { message: 'Market not found', error: 'Not Found', statusCode: 404 });
    if (market.tradeType !== 'clob' || market.marketType === 'group' || !market.tokens) {
      return jsonReply(400, { message: 'Orderbook is only available for CLOB markets', error: 'Bad Request', statusCode: 400 });
    }
    if (ctx.settings.failingBooks?.includes(slug)) return this.serverError(ctx, 500);
    const snap = bookAt('limitless', slug, ctx.nowMs, ctx.seed);
    const level =
      (side: 'BUY' | 'SELL') =>
      ([price, size]: readonly [string, string]) => ({ price: Number(price), size: rawSize(size), side });
    const bestBid = Number(snap.bids[0]?.[0] ?? 0);
    const bestAsk = Number(snap.asks[0]?.[0] ?? 1);
    return jsonReply(200, {
      bids: snap.bids.map(level('BUY')),
      asks: snap.asks.map(level('SELL')),
      tokenId: market.tokens.yes,
      adjustedMidpoint: Math.round(((bestBid + bestAsk) / 2) * 1000) / 1000,
      maxSpread: '0.05',
      minSize: '1000000',
      lastTradePrice: bestBid,
    });
  }

  private catalogueFor(ctx: RequestContext): Catalogue {
    const count = ctx.settings.markets ?? DEFAULT_LIMITLESS_MARKETS;
    const key = `${ctx.seed}:${count}`;
    if (this.catalogue?.key !== key) {
      const markets = limitlessMarkets(ctx.seed, count);
      const bySlug = new Map<string, LimitlessMarket>();
      for (const m of markets) {
        bySlug.set(m.slug, m);
        for (const child of m.markets ?? []) bySlug.set(child.slug, child);
      }
      this.catalogue = { key, markets, bySlug };
    }
    return this.catalogue;
  }
}

/**
 * Sizes as the venue sends them: integers in millionths of a share (USDC has 6 decimals; the
 * official SDK documented book sizes as "shares scaled by 1e6").
 */
export function rawSize(shares: string): number {
  return Math.round(Number(shares) * 1e6);
}

/** The market with its scenario end (`marketEnds`) applied to it and its children: expiration replaced, expired once passed. */
function withEnd(market: LimitlessMarket, ctx: RequestContext): LimitlessMarket {
  const ends = ctx.settings.marketEnds;
  if (!ends) return market;
  const apply = (m: LimitlessMarket): LimitlessMarket => {
    const endMs = ends[String(m.id)];
    return endMs === undefined ? m : { ...m, expirationTimestamp: endMs, expired: m.expired || ctx.nowMs >= endMs };
  };
  const top = apply(market);
  return top.markets ? { ...top, markets: top.markets.map(apply) } : top;
}

function notFound(ctx: RequestContext): Reply {
  return jsonReply(404, { message: `Cannot ${ctx.method} ${ctx.path}`, error: 'Not Found', statusCode: 404 });
}

function intParam(value: string | null, fallback: number): number | undefined {
  if (value === null || value === '') return fallback;
  return /^-?\d{1,9}$/.test(value) ? Number(value) : undefined;
}
