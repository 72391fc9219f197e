import { alignDown, lastClosedOpenTime, timeframeMs, type Timeframe } from '@tickfleet/core';
import { candleValuesAt, isHole } from '../data/candles.js';
import { hexDigits } from '../data/random.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';

const AGGS_PATH = /^\/v2\/aggs\/ticker\/([^/]+)\/range\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)$/;
const DEFAULT_LIMIT = 5000;
const MAX_LIMIT = 50_000;
const DAY_MS = 86_400_000;

/** (multiplier, timespan) pairs that are tickfleet timeframes; the emulation serves only these. */
const TIMESPANS: Record<string, Partial<Record<number, Timeframe>>> = {
  minute: { 1: '1m', 3: '3m', 5: '5m', 15: '15m', 30: '30m' },
  hour: { 1: '1h', 2: '2h', 4: '4h', 6: '6h', 8: '8h', 12: '12h' },
  day: { 1: '1d' },
  week: { 1: '1w' },
};

interface PageParams {
  limit: number;
  sort: 'asc' | 'desc';
  adjusted: boolean;
}

/**
 * Polygon.io aggregates (`/v2/aggs/ticker/{ticker}/range/{multiplier}/{timespan}/{from}/{to}`).
 * Simplification: bars exist for every interval, 24/7, aligned to UTC.
 */
export class PolygonEmulation implements VenueEmulation {
  route(ctx: RequestContext): Route | Reply {
    const m = ctx.method === 'GET' ? AGGS_PATH.exec(ctx.path) : null;
    if (!m) return jsonReply(404, { status: 'NOT_FOUND', request_id: requestId(ctx), message: 'Not found' });
    if (!apiKey(ctx)) return jsonReply(401, { status: 'ERROR', request_id: requestId(ctx), error: 'Unknown API Key' });
    const [, ticker = '', multiplier = '', timespan = '', from = '', to = ''] = m;
    return { weight: 1, handle: () => this.aggregates(ctx, decodeURIComponent(ticker), multiplier, timespan, from, to) };
  }

  tooManyRequests(ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    // Polygon sends no Retry-After on its own 429; storms (a test control) do
    return jsonReply(
      429,
      {
        status: 'ERROR',
        request_id: requestId(ctx),
        error: "You've exceeded the maximum requests per minute, please wait or upgrade your subscription to continue. https://polygon.io/pricing",
      },
      cause === 'storm' ? { 'Retry-After': retryAfterSeconds(retryAfterMs) } : {},
    );
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0, 'limit');
  }

  serverError(ctx: RequestContext, status: number): Reply {
    return jsonReply(status, { status: 'ERROR', request_id: requestId(ctx), error: 'Internal server error' });
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {}

  private aggregates(ctx: RequestContext, ticker: string, multiplierText: string, timespan: string, fromText: string, toText: string): Reply {
    const bad = (error: string): Reply => jsonReply(400, { status: 'ERROR', request_id: requestId(ctx), error });
    if (!/^[A-Z][A-Z0-9.:-]{0,15}$/.test(ticker)) return bad(`Invalid ticker: ${ticker}`);
    const tf = TIMESPANS[timespan]?.[Number(multiplierText)];
    if (!tf) return bad(`Unsupported range ${multiplierText}/${timespan} (the emulation serves tickfleet timeframes only)`);
    const fromMs = parseBound(fromText, false);
    const toMs = parseBound(toText, true);
    if (fromMs === undefined) return bad(`Could not parse the from date: ${fromText}`);
    if (toMs === undefined) return bad(`Could not parse the to date: ${toText}`);
    const page = pageParams(ctx.query);
    if (!page) return bad('Invalid cursor or query parameters');

    const lenMs = timeframeMs(tf);
    const last = Math.min(lastClosedOpenTime(ctx.nowMs, tf), toMs);
    const holes = ctx.settings.holes;
    // collect one bar beyond the page to learn whether another page exists
    const bars: number[] = [];
    if (page.sort === 'asc') {
      let t = alignDown(fromMs, tf);
      if (t < fromMs) t += lenMs;
      for (; t <= last && bars.length <= page.limit; t += lenMs) if (!isHole('polygon', ticker, tf, t, ctx.seed, holes)) bars.push(t);
    } else {
      for (let t = alignDown(last, tf); t >= fromMs && bars.length <= page.limit; t -= lenMs)
        if (!isHole('polygon', ticker, tf, t, ctx.seed, holes)) bars.push(t);
    }
    const more = bars.length > page.limit;
    if (more) bars.length = page.limit;
    const results = bars.map((t) => {
      const c = candleValuesAt('polygon', ticker, tf, t, ctx.seed);
      return { v: c.volume, vw: c.vwap, o: c.open, c: c.close, h: c.high, l: c.low, t, n: c.trades };
    });
    const body: Record<string, unknown> = {
      ticker,
      queryCount: results.length,
      resultsCount: results.length,
      adjusted: page.adjusted,
    };
    // like Polygon, an empty range has no `results` key at all
    if (results.length > 0) body.results = results;
    body.status = 'OK';
    body.request_id = requestId(ctx);
    body.count = results.length;
    const lastBar = bars[bars.length - 1];
    if (more && lastBar !== undefined) {
      const cursor = Buffer.from(`limit=${page.limit}&sort=${page.sort}&adjusted=${page.adjusted}`).toString('base64url');
      const range = page.sort === 'asc' ? `${lastBar + lenMs}/${toMs}` : `${fromMs}/${lastBar - 1}`;
      body.next_url = `${ctx.baseUrl}/v2/aggs/ticker/${encodeURIComponent(ticker)}/range/${multiplierText}/${timespan}/${range}?cursor=${cursor}`;
    }
    return jsonReply(200, body);
  }
}

function apiKey(ctx: RequestContext): string {
  const fromQuery = ctx.query.get('apiKey');
  if (fromQuery) return fromQuery;
  const auth = ctx.headers.authorization;
  return auth?.startsWith('Bearer ') ? auth.slice(7).trim() : '';
}

function requestId(ctx: RequestContext): string {
  return hexDigits(32, 'polygon-request', ctx.serial, ctx.nowMs);
}

/** `YYYY-MM-DD` (a whole UTC day: start for `from`, end for `to`) or epoch milliseconds. */
function parseBound(text: string, isEnd: boolean): number | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const dayMs = Date.parse(`${text}T00:00:00Z`);
    if (!Number.isFinite(dayMs)) return undefined;
    return isEnd ? dayMs + DAY_MS - 1 : dayMs;
  }
  if (/^\d{1,16}$/.test(text)) return Number(text);
  return undefined;
}

/** Page parameters from the query, or from the cursor of a next_url (which carries them). */
function pageParams(query: URLSearchParams): PageParams | undefined {
  let source = query;
  const cursor = query.get('cursor');
  if (cursor !== null) {
    const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!/^limit=\d+&sort=(asc|desc)&adjusted=(true|false)$/.test(decoded)) return undefined;
    source = new URLSearchParams(decoded);
  }
  const limitText = source.get('limit');
  const limit = limitText === null ? DEFAULT_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1) return undefined;
  const sort = source.get('sort') ?? 'asc';
  if (sort !== 'asc' && sort !== 'desc') return undefined;
  const adjusted = source.get('adjusted') ?? 'true';
  if (adjusted !== 'true' && adjusted !== 'false') return undefined;
  return { limit: Math.min(limit, MAX_LIMIT), sort, adjusted: adjusted === 'true' };
}
