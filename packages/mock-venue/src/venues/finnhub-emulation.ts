import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { finnhubOptionChain } from './finnhub-options.js';

/** Finnhub's cap on top of every plan's per-minute limit: "30 API calls/ second". */
export const FINNHUB_BURST_PER_SECOND = 30;
const BURST_WINDOW_MS = 1000;
const SYMBOL = /^[A-Z][A-Z0-9.]{0,9}$/;
/** The body Finnhub answers a 429 with, for the per-minute limit and the per-second cap alike. */
const LIMIT_BODY = { error: 'API limit reached. Please try again later. Remaining Limit: 0' };

/**
 * Finnhub (`/api/v1/...`): `GET /api/v1/stock/option-chain?symbol=` with the key as `token=` in the
 * query or the `X-Finnhub-Token` header. Two limits, both enforced: the plan's requests per
 * clock-aligned minute (the server's window limiter; free plan 60) and, before it, at most 30
 * requests in any sliding second (this class). Every answer carries `X-Ratelimit-Limit`,
 * `X-Ratelimit-Remaining` and `X-Ratelimit-Reset` (epoch seconds of the minute window's end).
 * Simplification: every well-formed ticker has a chain (2 expirations × 3 strikes × call/put).
 */
export class FinnhubEmulation implements VenueEmulation {
  /** Arrival times of the requests the per-second cap let through in the last second, oldest first. */
  private recent: number[] = [];
  private burstRejected = 0;
  private maxPerSecond = 0;

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET' || !ctx.path.startsWith('/api/v1/')) return jsonReply(404, { error: 'Not Found' });
    if (!token(ctx)) return this.withLimitHeaders(ctx, jsonReply(401, { error: 'Please use an API key.' }));
    if (ctx.path !== '/api/v1/stock/option-chain') return this.withLimitHeaders(ctx, jsonReply(404, { error: 'Not Found' }));
    const cutoff = ctx.nowMs - BURST_WINDOW_MS;
    while (this.recent.length > 0 && this.recent[0]! <= cutoff) this.recent.shift();
    if (this.recent.length >= FINNHUB_BURST_PER_SECOND) {
      this.burstRejected += 1;
      return this.tooManyRequests(ctx);
    }
    this.recent.push(ctx.nowMs);
    this.maxPerSecond = Math.max(this.maxPerSecond, this.recent.length);
    const symbol = ctx.query.get('symbol') ?? '';
    return {
      weight: 1,
      handle: () => {
        if (!SYMBOL.test(symbol)) return this.withLimitHeaders(ctx, jsonReply(422, { error: 'Wrong symbol' }));
        return this.withLimitHeaders(ctx, jsonReply(200, finnhubOptionChain(symbol, ctx.nowMs, ctx.seed)));
      },
    };
  }

  /** Finnhub's own 429 carries no Retry-After (clients read X-Ratelimit-Reset); storms, a test control, do. */
  tooManyRequests(ctx: RequestContext, retryAfterMs = 0, cause: 'limit' | 'storm' = 'limit'): Reply {
    return this.withLimitHeaders(ctx, jsonReply(429, LIMIT_BODY, cause === 'storm' ? { 'Retry-After': retryAfterSeconds(retryAfterMs) } : {}));
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx);
  }

  serverError(ctx: RequestContext, status: number): Reply {
    return this.withLimitHeaders(ctx, jsonReply(status, { error: 'Internal server error' }));
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {}

  reset(): void {
    this.recent = [];
    this.burstRejected = 0;
    this.maxPerSecond = 0;
  }

  /** Ground truth of the per-second cap: the most requests let through in any one second, and the requests it refused. */
  extraStats(): Record<string, number> {
    return { burstLimitPerSecond: FINNHUB_BURST_PER_SECOND, maxPerSecond: this.maxPerSecond, burstRejected: this.burstRejected };
  }

  private withLimitHeaders(ctx: RequestContext, reply: Reply): Reply {
    const { limit, windowMs } = ctx.limit;
    const windowEnd = Math.floor(ctx.nowMs / windowMs) * windowMs + windowMs;
    return {
      ...reply,
      headers: {
        ...reply.headers,
        'X-Ratelimit-Limit': String(limit),
        'X-Ratelimit-Remaining': String(Math.max(0, limit - ctx.usedWeight())),
        'X-Ratelimit-Reset': String(Math.floor(windowEnd / 1000)),
      },
    };
  }
}

function token(ctx: RequestContext): string {
  const header = ctx.headers['x-finnhub-token'];
  return ctx.query.get('token') ?? (typeof header === 'string' ? header.trim() : '');
}
