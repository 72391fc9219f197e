import { usEquitySessions, type Session, type Timeframe } from '@tickfleet/core';
import { candleValuesAt, isHole, type CandleValues } from '../data/candles.js';
import { hexDigits, unitFloat } from '../data/random.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import type { Holes } from '../scenario.js';

const BARS_PATH = '/v2/stocks/bars';
/** The single-symbol form the official client's `stockBarSingle` (v3 `getBarsV2`) calls. */
const SINGLE_BARS_PATH = /^\/v2\/stocks\/([^/]+)\/bars$/;
const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 10_000;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const MONTH_MS = 30 * 24 * HOUR_MS;
/** A Basic-plan key may not ask the SIP feed for its last 15 minutes; without `end` SIP is served up to then. */
const RECENT_SIP_MS = 15 * MINUTE_MS;
/** Share of extended-hours minutes (04:00-09:30, after the close to 20:00 New York) that had a trade, hence a bar. */
export const ALPACA_EXTENDED_MINUTE_SHARE = 0.3;
const TIMEFRAMES: Record<string, Timeframe> = { '1Min': '1m', '1Day': '1d' };
const FEEDS = new Set(['sip', 'iex']);
const ADJUSTMENTS = new Set(['raw', 'split', 'dividend', 'spin-off', 'all']);
const RFC3339 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * Open times of `symbol`'s bars of `tf` that Alpaca has in `[fromMs, toMs)` at `nowMs`, ascending: the
 * emulation's ground truth (tests compare stored bars with it).
 * - `1d`: one bar per US-equity session, stamped at New York midnight, served from the session's open
 *   on (while the session runs it is still changing, as Alpaca's is).
 * - `1m`: every closed minute of the regular session (09:30 to the close, 13:00 on early-close days),
 *   and a deterministic ~30% of the extended-hours minutes from 04:00 to four hours after the close:
 *   Alpaca returns extended-hours bars, but only for minutes in which something traded.
 * Scenario holes remove bars as for every venue.
 */
export function alpacaBarTimes(symbol: string, tf: Timeframe, fromMs: number, toMs: number, nowMs: number, seed: number, holes?: Holes): number[] {
  return [...barTimes(symbol, tf, fromMs, toMs, nowMs, seed, holes)];
}

/** alpacaBarTimes, lazily: a page stops asking once it holds `limit` bars, however long the range. */
function* barTimes(symbol: string, tf: Timeframe, fromMs: number, toMs: number, nowMs: number, seed: number, holes?: Holes): Generator<number> {
  // sessions are walked a month at a time so a long range costs only what the page reads
  for (let chunk = fromMs; chunk < toMs; chunk += MONTH_MS) {
    for (const s of usEquitySessions(chunk, Math.min(toMs, chunk + MONTH_MS))) {
      if (tf === '1d') {
        // a session overlapping two chunks is seen twice: count it in the chunk holding its day start
        if (s.dayStartMs < chunk || s.dayStartMs >= chunk + MONTH_MS) continue;
        if (s.dayStartMs >= fromMs && s.dayStartMs < toMs && nowMs >= s.openMs && !isHole('alpaca', symbol, tf, s.dayStartMs, seed, holes)) yield s.dayStartMs;
        continue;
      }
      const [first, end] = extendedHours(s);
      const lo = Math.max(first, chunk, Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS);
      const hi = Math.min(end, toMs, chunk + MONTH_MS);
      for (let t = Math.ceil(lo / MINUTE_MS) * MINUTE_MS; t < hi && t + MINUTE_MS <= nowMs; t += MINUTE_MS) {
        const regular = t >= s.openMs && t < s.closeMs;
        if (!regular && unitFloat('alpaca-extended', symbol, t, seed) >= ALPACA_EXTENDED_MINUTE_SHARE) continue;
        if (!isHole('alpaca', symbol, tf, t, seed, holes)) yield t;
      }
    }
  }
}

/**
 * The values Alpaca serves for `symbol`'s bar of `tf` opening at `t` (one of alpacaBarTimes). Day bars
 * open at New York midnight, off the UTC day grid the generator aligns to: their values come from the
 * generator's hour candle there (deterministic, which is all the data needs to be). Volume is whole shares.
 */
export function alpacaBarValues(symbol: string, tf: Timeframe, t: number, seed: number): CandleValues {
  const v = candleValuesAt('alpaca', symbol, tf === '1d' ? '1h' : tf, t, seed);
  return { ...v, volume: Math.max(1, Math.round(v.volume)) };
}

/** Pre-market start (04:00 New York) and post-market end (four hours after the regular close) of a session. */
function extendedHours(s: Session): [number, number] {
  return [s.dayStartMs + 4 * HOUR_MS, s.closeMs + 4 * HOUR_MS];
}

interface BarsQuery {
  symbols: string[];
  tf: Timeframe;
  fromMs: number;
  toMs: number;
  limit: number;
  sort: 'asc' | 'desc';
  /** Where the page starts: index into the sorted symbols and the first open time to serve (asc) or last (desc). */
  cursor: { symbol: number; t: number } | undefined;
  /** `end` was given: a Basic plan's recent-SIP refusal applies only then. */
  endGiven: boolean;
}

/**
 * Alpaca Market Data v2 stock bars: multi-symbol `GET /v2/stocks/bars` (bars keyed by symbol, sorted
 * by symbol then time, `limit` (default 1000, at most 10000) counting bars over all symbols) and
 * single-symbol `GET /v2/stocks/{symbol}/bars` (a bar array and `symbol`), both paged by
 * `page_token`/`next_page_token`. Auth by the `APCA-API-KEY-ID`/`APCA-API-SECRET-KEY` headers (401
 * when missing, 403 for a key that is not a key), the Basic plan's SIP delay (an `end` within the last
 * 15 minutes 403; no `end` serves up to 15 minutes ago), 400 for bad parameters, and
 * `X-RateLimit-Limit/Remaining/Reset` on every answer (200 per minute by default, clock-aligned
 * windows; 429 carries no Retry-After, the reset tells when).
 */
export class AlpacaEmulation implements VenueEmulation {
  route(ctx: RequestContext): Route | Reply {
    const single = SINGLE_BARS_PATH.exec(ctx.path);
    if (ctx.method !== 'GET' || (ctx.path !== BARS_PATH && !single)) return this.withLimit(ctx, jsonReply(404, { message: 'Not Found' }));
    const keyId = header(ctx, 'apca-api-key-id');
    const secret = header(ctx, 'apca-api-secret-key');
    if (!keyId || !secret) return this.withLimit(ctx, jsonReply(401, { message: 'unauthorized.' }));
    // Alpaca key ids are upper-case letters and digits; anything else is no key Alpaca issued.
    if (!/^[A-Z0-9]{8,32}$/.test(keyId) || secret.length < 8) return this.withLimit(ctx, jsonReply(403, { message: 'forbidden.' }));
    const symbol = single ? decodeURIComponent(single[1]!) : undefined;
    return { weight: 1, handle: () => this.withLimit(ctx, this.bars(ctx, symbol)) };
  }

  tooManyRequests(ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    // Alpaca's own 429 has no Retry-After (X-RateLimit-Reset says when); injected storms carry one.
    const reply = jsonReply(429, { message: 'too many requests.' }, cause === 'storm' ? { 'Retry-After': retryAfterSeconds(retryAfterMs) } : {});
    return this.withLimit(ctx, reply);
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0, 'limit');
  }

  serverError(ctx: RequestContext, status: number): Reply {
    return this.withLimit(ctx, jsonReply(status, { message: 'internal server error' }));
  }

  malformed(_ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    return malformJson(reply, kind);
  }

  invalidate(): void {}

  /** Every answer reports the window's usage, as Alpaca's do (429s included). */
  private withLimit(ctx: RequestContext, reply: Reply): Reply {
    const { limit, windowMs } = ctx.limit;
    const windowEnd = Math.floor(ctx.nowMs / windowMs) * windowMs + windowMs;
    reply.headers['X-RateLimit-Limit'] = String(limit);
    reply.headers['X-RateLimit-Remaining'] = String(Math.max(0, limit - ctx.usedWeight()));
    reply.headers['X-RateLimit-Reset'] = String(Math.ceil(windowEnd / 1000));
    reply.headers['X-Request-ID'] = hexDigits(32, 'alpaca-request', ctx.serial, ctx.nowMs);
    return reply;
  }

  /** Bars of the `symbols` query, or of `single` (the path's symbol) in the single-symbol form. */
  private bars(ctx: RequestContext, single?: string): Reply {
    const parsed = parseQuery(ctx, single);
    if (typeof parsed === 'string') return jsonReply(400, { message: parsed });
    const feed = ctx.query.get('feed') ?? 'sip';
    if (feed === 'sip' && parsed.toMs > ctx.nowMs - RECENT_SIP_MS) {
      if (parsed.endGiven) return jsonReply(403, { message: 'subscription does not permit querying recent SIP data' });
      // Without `end` a Basic plan is served the SIP feed up to 15 minutes ago (`end` inclusive, so +1).
      parsed.toMs = ctx.nowMs - RECENT_SIP_MS + 1;
    }
    const holes = ctx.settings.holes;
    const out: Record<string, Array<Record<string, number | string>>> = {};
    let served = 0;
    let next: string | null = null;
    const startSymbol = parsed.cursor?.symbol ?? 0;
    for (let i = startSymbol; i < parsed.symbols.length && next === null; i++) {
      const symbol = parsed.symbols[i]!;
      const resume = parsed.cursor && i === startSymbol ? parsed.cursor.t : undefined;
      let times: Iterable<number>;
      if (parsed.sort === 'asc') {
        times = barTimes(symbol, parsed.tf, Math.max(parsed.fromMs, resume ?? parsed.fromMs), parsed.toMs, ctx.nowMs, ctx.seed, holes);
      } else {
        times = alpacaBarTimes(
          symbol,
          parsed.tf,
          parsed.fromMs,
          Math.min(parsed.toMs, resume === undefined ? parsed.toMs : resume + 1),
          ctx.nowMs,
          ctx.seed,
          holes,
        ).reverse();
      }
      for (const t of times) {
        if (served === parsed.limit) {
          next = Buffer.from(JSON.stringify([i, t])).toString('base64');
          break;
        }
        const v = alpacaBarValues(symbol, parsed.tf, t, ctx.seed);
        (out[symbol] ??= []).push({
          t: new Date(t).toISOString().replace('.000Z', 'Z'),
          o: v.open,
          h: v.high,
          l: v.low,
          c: v.close,
          v: v.volume,
          n: v.trades,
          vw: v.vwap,
        });
        served += 1;
      }
    }
    if (single !== undefined) return jsonReply(200, { bars: out[parsed.symbols[0]!] ?? null, symbol: parsed.symbols[0], next_page_token: next });
    return jsonReply(200, { bars: out, next_page_token: next, currency: 'USD' });
  }
}

function header(ctx: RequestContext, name: string): string {
  const value = ctx.headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
}

/** The request's parameters, or the message of Alpaca's 400 answer. */
function parseQuery(ctx: RequestContext, single?: string): BarsQuery | string {
  const q = ctx.query;
  const symbolsText = single ?? q.get('symbols');
  if (!symbolsText) return 'missing symbols';
  const symbols = single !== undefined ? [single.toUpperCase()] : [...new Set(symbolsText.split(',').map((s) => s.trim().toUpperCase()))].sort();
  const bad = symbols.find((s) => !/^[A-Z][A-Z0-9.]{0,15}$/.test(s));
  if (bad !== undefined) return `invalid symbol: ${JSON.stringify(bad)}`;
  const tfText = q.get('timeframe');
  if (!tfText) return 'missing timeframe';
  const tf = TIMEFRAMES[tfText];
  if (!tf) return `invalid timeframe: ${tfText} (the emulation serves 1Min and 1Day)`;
  const startText = q.get('start');
  // Alpaca's default start is the beginning of the current day
  const fromMs = startText === null ? Math.floor(ctx.nowMs / 86_400_000) * 86_400_000 : parseTime(startText, false);
  if (fromMs === undefined) return `invalid start: ${startText ?? ''}`;
  const endText = q.get('end');
  const toMs = endText === null ? ctx.nowMs : parseTime(endText, true);
  if (toMs === undefined) return `invalid end: ${endText ?? ''}`;
  if (toMs < fromMs) return 'end should not be before start';
  const limitText = q.get('limit');
  const limit = limitText === null ? DEFAULT_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1) return `invalid limit: ${limitText ?? ''}`;
  if (limit > MAX_LIMIT) return `invalid limit: exceeds max limit of ${MAX_LIMIT}`;
  const feed = q.get('feed');
  if (feed !== null && !FEEDS.has(feed)) return `invalid feed: ${feed}`;
  const adjustment = q.get('adjustment');
  if (adjustment !== null && !adjustment.split(',').every((a) => ADJUSTMENTS.has(a))) return `invalid adjustment: ${adjustment}`;
  const sort = q.get('sort') ?? 'asc';
  if (sort !== 'asc' && sort !== 'desc') return `invalid sort: ${sort}`;
  let cursor: BarsQuery['cursor'];
  const token = q.get('page_token');
  if (token !== null) {
    let decoded: unknown;
    try {
      decoded = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    } catch {
      decoded = undefined;
    }
    if (!Array.isArray(decoded) || decoded.length !== 2 || !decoded.every((n) => Number.isSafeInteger(n)) || decoded[0] >= symbols.length || decoded[0] < 0) {
      return 'invalid page token';
    }
    cursor = { symbol: decoded[0] as number, t: decoded[1] as number };
  }
  // the end is inclusive at Alpaca: serve open times up to and including it
  return { symbols, tf, fromMs, toMs: toMs + 1, limit, sort, cursor, endGiven: endText !== null };
}

/** RFC-3339 (any offset, up to nine fractional digits) or a date (a whole UTC day: its start, or its end for `end`). */
function parseTime(text: string | null, isEnd: boolean): number | undefined {
  if (text === null) return undefined;
  if (!RFC3339.test(text)) return undefined;
  if (text.length === 10) {
    const day = Date.parse(`${text}T00:00:00Z`);
    return Number.isFinite(day) ? (isEnd ? day + 86_400_000 - 1 : day) : undefined;
  }
  const ms = Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isFinite(ms) ? ms : undefined;
}
