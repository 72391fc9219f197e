import { gzipSync } from 'node:zlib';
import { isXetraSource, minuteHasTrades, parseXetraFileName, tradesInMinute, xetraFilesBetween, DEFAULT_XETRA_ISINS } from '../data/trades.js';
import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';

const MINUTE_MS = 60_000;
/** The listing shows the files of the last 24 hours, as the real bucket keeps about a day. */
export const XETRA_LISTING_MS = 24 * 60 * MINUTE_MS;
const FILE_CACHE_ENTRIES = 256;

/**
 * Deutsche Börse post-trade files (`GET /{SOURCE}-posttrade`, `GET /download/{file}`): one gzip of
 * newline-delimited JSON records per minute with trades. Simplification: trading runs 24/7.
 *
 * Limits are per market (DETR, DFRA, DGAT, DEUR): a listing or a download counts against the market
 * it names (a download's market is its file name's prefix), each market allowed the scenario's
 * whole limit (default 5 per 2 s) on its own, counted in `stats().venues.xetra.scopes`.
 */
export class XetraEmulation implements VenueEmulation {
  private readonly files = new Map<string, Buffer>();
  private listing: { key: string; body: string } | undefined;

  route(ctx: RequestContext): Route | Reply {
    if (ctx.method !== 'GET') return jsonReply(405, { message: 'Method Not Allowed' });
    const list = /^\/([A-Z]{4})-posttrade$/.exec(ctx.path);
    if (list && isXetraSource(list[1] ?? '')) {
      const source = list[1] ?? '';
      return { weight: 1, scope: source, handle: () => this.list(ctx, source) };
    }
    if (ctx.path.startsWith('/download/')) {
      const fileName = decodeURIComponent(ctx.path.slice('/download/'.length));
      const market = parseXetraFileName(fileName)?.source;
      return { weight: 1, ...(market ? { scope: market } : {}), handle: () => this.download(ctx, fileName) };
    }
    return notFound();
  }

  tooManyRequests(_ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    return jsonReply(429, { message: 'Too Many Requests' }, cause === 'storm' ? { 'Retry-After': retryAfterSeconds(retryAfterMs) } : {});
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0, 'limit');
  }

  serverError(_ctx: RequestContext, status: number): Reply {
    return jsonReply(status, { message: status === 503 ? 'Service Unavailable' : 'Internal Server Error' });
  }

  malformed(ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    if (!Buffer.isBuffer(reply.body)) return malformJson(reply, kind);
    // a gzip cut in half, or a valid gzip whose lines are not post-trade records
    const body = kind === 'truncated' ? reply.body.subarray(0, Math.floor(reply.body.length / 2)) : gzipSync(`{"unexpected":"shape","serial":${ctx.serial}}\n`);
    return { ...reply, body };
  }

  invalidate(): void {
    this.files.clear();
    this.listing = undefined;
  }

  private list(ctx: RequestContext, source: string): Reply {
    if (!isXetraSource(source)) return notFound();
    const isins = ctx.settings.isins ?? DEFAULT_XETRA_ISINS;
    // a minute's file appears once the minute has closed
    const toMs = Math.floor(ctx.nowMs / MINUTE_MS) * MINUTE_MS;
    const key = `${source}:${toMs}:${ctx.seed}:${isins.join(',')}`;
    if (this.listing?.key !== key) {
      const names = xetraFilesBetween(source, toMs - XETRA_LISTING_MS, toMs, ctx.seed, isins);
      this.listing = { key, body: JSON.stringify({ SourcePrefix: `${source}-posttrade`, CurrentFiles: names }) };
    }
    return { status: 200, headers: {}, body: this.listing.body };
  }

  private download(ctx: RequestContext, fileName: string): Reply {
    const parsed = parseXetraFileName(fileName);
    const isins = ctx.settings.isins ?? DEFAULT_XETRA_ISINS;
    if (!parsed || parsed.minuteMs + MINUTE_MS > ctx.nowMs || !minuteHasTrades(parsed.source, parsed.minuteMs, ctx.seed, isins)) return notFound();
    const key = `${fileName}:${ctx.seed}:${isins.join(',')}`;
    let body = this.files.get(key);
    if (!body) {
      const lines = tradesInMinute(parsed.source, parsed.minuteMs, ctx.seed, isins).map((t) => JSON.stringify(t));
      body = gzipSync(`${lines.join('\n')}\n`);
      if (this.files.size >= FILE_CACHE_ENTRIES) {
        const oldest = this.files.keys().next().value;
        if (oldest !== undefined) this.files.delete(oldest);
      }
      this.files.set(key, body);
    }
    return { status: 200, headers: { 'content-type': 'application/gzip' }, body };
  }
}

function notFound(): Reply {
  return jsonReply(404, { message: 'Not Found' });
}
