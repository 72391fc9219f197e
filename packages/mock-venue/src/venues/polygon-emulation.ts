import { timeframeMs, type Timeframe } from '@tickfleet/core';
import { isHole } from '../data/candles.js';
import { hexDigits } from '../data/random.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { polygonBarTimes, polygonBarValues } from './polygon-emulation-bars.js';

const AGGS_PATH = /^\/v2\/aggs\/ticker\/([^/]+)\/range\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)$/;
const DEFAULT_LIMIT = 5000;
const MAX_LIMIT = 50_000;
const DAY_MS = 86_400_000;

/** (multiplier, timespan) pairs that are tickfleet timeframes; the emulation serves only these. */
const TIMESPANS: Record<string, Partial<Record<number, Timeframe>>> = {
  minute: { 1: '1m', 3: '3m', 5: '5m', 15: '15m', 30: '30m' },
  hour: { 1: '1h', 2: '2h', 4: '4h', 6: '6h', 8: '8h', 12: '12h' },
  day: { 1: '1d' },
};

const PLAN_TIMEFRAME_MESSAGE = "Your plan doesn't include this data timeframe. Please upgrade your plan at https://polygon.io/pricing";

interface PageParams {
  limit: number;
  sort: 'asc' | 'desc';
  adjusted: boolean;
}

/**
 * Polygon.io aggregates (`/v2/aggs/ticker/{ticker}/range/{multiplier}/{timespan}/{from}/{to}`) for
 * US stocks: bars only on trading sessions, day bars at New York midnight, sparse extended-hours
 * minutes (see polygon-emulation-bars.ts). Errors as Polygon answers them: 401 `API Key was not
 * provided` / `Unknown API Key` (status ERROR, `error`), 403 NOT_AUTHORIZED with a `message` when
 * the plan's history (scenario `historyDays`) does not reach the range's start. Simplifications:
 * week bars (Sunday-based in New York, no tickfleet grid) are not served; every trading minute of
 * the regular session has a bar.
 */
export class PolygonEmulation implements VenueEmulation {
  route(ctx: RequestContext): Route | Reply {
    const m = ctx.method === 'GET' ? AGGS_PATH.exec(ctx.path) : null;
    if (!m) return jsonReply(404, { status: 'NOT_FOUND', request_id: requestId(ctx), message: 'Not found' });
    const key = apiKey(ctx);
    if (!key) return jsonReply(401, { status: 'ERROR', request_id: requestId(ctx), error: 'API Key was not provided' });
    const known = ctx.settings.apiKeys;
    if (known && !known.includes(key)) return jsonReply(401, { status: 'ERROR', request_id: requestId(ctx), error: 'Unknown API Key' });
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

    // The plan's history reaches back `historyDays` whole days (Polygon's plans: 2, 5, 10, 20 years).
    const historyDays = ctx.settings.historyDays;
    if (historyDays !== undefined && fromMs < Math.floor(ctx.nowMs / DAY_MS) * DAY_MS - historyDays * DAY_MS) {
      return jsonReply(403, { status: 'NOT_AUTHORIZED', request_id: requestId(ctx), message: PLAN_TIMEFRAME_MESSAGE });
    }

    const lenMs = timeframeMs(tf);
    const holes = ctx.settings.holes;
    // collect one bar beyond the page to learn whether another page exists
    const bars: number[] = [];
    for (const t of polygonBarTimes(ticker, tf, fromMs, toMs, ctx.nowMs, ctx.seed, page.sort)) {
      if (bars.length > page.limit) break;
      if (!isHole('polygon', ticker, tf, t, ctx.seed, holes)) bars.push(t);
    }
    const more = bars.length > page.limit;
    if (more) bars.length = page.limit;
    const results = bars.map((t) => {
      const c = polygonBarValues(ticker, tf, t, ctx.nowMs, ctx.seed);
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

/**
 * `YYYY-MM-DD` or epoch milliseconds. A date is a whole New York day, as Polygon reads it: `from`
 * its midnight there, `to` the end of it (so `2024-01-15/2024-01-15` holds that session's bars).
 */
function parseBound(text: string, isEnd: boolean): number | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const dayMs = Date.parse(`${text}T00:00:00Z`);
    if (!Number.isFinite(dayMs)) return undefined;
    // New York is 4 or 5 hours behind UTC; its midnight is the one that is 04:00Z or 05:00Z on this date.
    const start = dayMs + newYorkOffsetMs(dayMs);
    return isEnd ? dayMs + DAY_MS + newYorkOffsetMs(dayMs + DAY_MS) - 1 : start;
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

/** Hours from a UTC midnight to New York's midnight of the same date (4 in summer, 5 in winter), from the IANA zone data. */
function newYorkOffsetMs(utcMidnightMs: number): number {
  const ny = NEW_YORK_HOUR.formatToParts(new Date(utcMidnightMs + 5 * 3600_000)).find((p) => p.type === 'hour')?.value;
  // 05:00Z is 00:00 New York in winter, 01:00 in summer
  return ny === '01' ? 4 * 3600_000 : 5 * 3600_000;
}

const NEW_YORK_HOUR = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: '2-digit', hourCycle: 'h23' });
