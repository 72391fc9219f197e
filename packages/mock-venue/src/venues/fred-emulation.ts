import { jsonReply, malformJson, retryAfterSeconds, type MalformedKind, type Reply } from '../internal/reply.js';
import type { RequestContext, Route, VenueEmulation } from '../internal/venue-emulation.js';
import { isFredSeries, observationDates, vintagesOf } from './fred-series.js';

const OBSERVATIONS_PATH = '/fred/series/observations';
const DAY_MS = 86_400_000;
const MAX_LIMIT = 100_000;
const OPEN_END = '9999-12-31';
const KEY_HELP = 'Read https://fred.stlouisfed.org/docs/api/api_key.html for more information.';
/** FRED keys are 32 lower-case alphanumerics; the emulation treats those starting with this as not registered. */
export const FRED_UNREGISTERED_KEY_PREFIX = 'unregistered';

interface Row {
  realtime_start: string;
  realtime_end: string;
  date: string;
  value: string;
}

/**
 * FRED's `GET /fred/series/observations` (https://fred.stlouisfed.org/docs/api/fred/series_observations.html):
 * the documented body, values as strings with `"."` for a date without a value, real-time periods
 * clipped to the requested one (default: today, UTC here), `offset`/`limit` paging, and FRED's error
 * bodies (https://fred.stlouisfed.org/docs/api/fred/errors.html). `file_type=json` answers JSON;
 * without `file_type` (FRED's default) or with `xml`, the same document and errors as XML
 * (`text/xml`). Simplifications: `units=lin`, `output_type=1` and `order_by=observation_date` only,
 * no `frequency` aggregation, and the limit is counted per venue (120 per minute, one key's
 * allowance) rather than per key.
 */
export class FredEmulation implements VenueEmulation {
  route(ctx: RequestContext): Route | Reply {
    const fileType = fileTypeOf(ctx);
    if (ctx.method !== 'GET' || ctx.path !== OBSERVATIONS_PATH) return fredError(404, 'Not Found', fileType);
    const key = ctx.query.get('api_key');
    if (!key) return fredError(400, 'Bad Request.  Variable api_key has not been set.', fileType);
    if (!/^[a-z0-9]{32}$/.test(key))
      return fredError(400, `Bad Request.  Variable api_key is not a 32 character alpha-numeric lower-case string.  ${KEY_HELP}`, fileType);
    if (key.startsWith(FRED_UNREGISTERED_KEY_PREFIX))
      return fredError(400, `Bad Request.  The value for variable api_key is not registered.  ${KEY_HELP}`, fileType);
    return { weight: 1, handle: () => this.observations(ctx) };
  }

  tooManyRequests(ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply {
    // FRED sends no Retry-After on its own 429; storms (a test control) do.
    const reply = fredError(429, 'Too Many Requests.  Exceeded Rate Limit', fileTypeOf(ctx));
    if (cause === 'storm') reply.headers['Retry-After'] = retryAfterSeconds(retryAfterMs);
    return reply;
  }

  banned(ctx: RequestContext): Reply {
    return this.tooManyRequests(ctx, 0, 'limit');
  }

  serverError(ctx: RequestContext, status: number): Reply {
    return fredError(status, 'Internal Server Error', fileTypeOf(ctx));
  }

  malformed(ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply {
    if (fileTypeOf(ctx) === 'json') return malformJson(reply, kind);
    // XML spoiled either way is cut off mid-document
    const text = reply.body.toString();
    return { ...reply, body: text.slice(0, Math.max(1, Math.floor(text.length / 2))) };
  }

  invalidate(): void {}

  private observations(ctx: RequestContext): Reply {
    const q = ctx.query;
    const given = q.get('file_type') ?? 'xml';
    const fileType = fileTypeOf(ctx);
    const refuse = (message: string): Reply => fredError(400, message, fileType);
    if (given !== fileType) return refuse('Bad Request.  Variable file_type is not one of the following values: xml, json.');
    const seriesId = q.get('series_id');
    if (!seriesId) return refuse('Bad Request.  Variable series_id is not set.');
    const today = isoDay(Math.floor(ctx.nowMs / DAY_MS) * DAY_MS);
    const dates: Record<string, string> = {};
    for (const [name, fallback] of [
      ['realtime_start', today],
      ['realtime_end', today],
      ['observation_start', '1776-07-04'],
      ['observation_end', OPEN_END],
    ] as const) {
      const value = q.get(name) ?? fallback;
      if (!validDay(value)) return refuse(`Bad Request.  Variable ${name} is not a valid date in the format YYYY-MM-DD.`);
      dates[name] = value;
    }
    const { realtime_start: rtStart = today, realtime_end: rtEnd = today, observation_start: obsStart = '', observation_end: obsEnd = '' } = dates;
    if (rtStart > rtEnd) return refuse('Bad Request.  Variable realtime_start can not be after variable realtime_end.');
    if (obsStart > obsEnd) return refuse('Bad Request.  Variable observation_start can not be after variable observation_end.');
    const limit = intParam(q.get('limit'), MAX_LIMIT);
    if (limit === undefined || limit < 1 || limit > MAX_LIMIT) return refuse(`Bad Request.  Variable limit is not an integer between 1 and ${MAX_LIMIT}.`);
    const offset = intParam(q.get('offset'), 0);
    if (offset === undefined) return refuse('Bad Request.  Variable offset is not a non-negative integer.');
    const sortOrder = q.get('sort_order') ?? 'asc';
    if (sortOrder !== 'asc' && sortOrder !== 'desc') return refuse('Bad Request.  Variable sort_order is not one of the following values: asc, desc.');
    for (const [name, only] of [
      ['units', 'lin'],
      ['output_type', '1'],
      ['order_by', 'observation_date'],
    ] as const) {
      const value = q.get(name);
      if (value !== null && value !== only)
        return refuse(`Bad Request.  Variable ${name} is ${JSON.stringify(value)}; the emulation serves ${name}=${only} only.`);
    }
    if (!isFredSeries(seriesId)) return refuse('Bad Request.  The series does not exist.');

    const rows = this.rows(seriesId, obsStart, obsEnd, rtStart, rtEnd, today, ctx.seed);
    if (sortOrder === 'desc') rows.reverse();
    const head = {
      realtime_start: rtStart,
      realtime_end: rtEnd,
      observation_start: obsStart,
      observation_end: obsEnd,
      units: 'lin',
      output_type: 1,
      file_type: fileType,
      order_by: 'observation_date',
      sort_order: sortOrder,
      count: rows.length,
      offset,
      limit,
    };
    const page = rows.slice(offset, offset + limit);
    if (fileType === 'json') return jsonReply(200, { ...head, observations: page });
    const lines = page.map((o) => `  <observation ${xmlAttributes(o)}/>`);
    return xmlReply(200, `<observations ${xmlAttributes(head)}>\n${lines.join('\n')}${lines.length > 0 ? '\n' : ''}</observations>`);
  }

  /**
   * The rows FRED's output_type 1 gives: for each observation date, each vintage published by
   * `today` whose real-time period meets the requested one, clipped to it. A vintage is in force
   * until the day before the next one was published (`9999-12-31` while current).
   */
  private rows(seriesId: string, obsStart: string, obsEnd: string, rtStart: string, rtEnd: string, today: string, seed: number): Row[] {
    const rows: Row[] = [];
    const todayMs = Date.parse(`${today}T00:00:00Z`);
    // Nothing dated after today can have been published by today.
    const lastMs = Math.min(Date.parse(`${obsEnd}T00:00:00Z`), todayMs);
    for (const dateMs of observationDates(seriesId, Date.parse(`${obsStart}T00:00:00Z`), lastMs)) {
      const published = vintagesOf(seriesId, dateMs, seed).filter((v) => v.startMs <= todayMs);
      for (const [i, v] of published.entries()) {
        const next = published[i + 1];
        const start = isoDay(v.startMs);
        const end = next ? isoDay(next.startMs - DAY_MS) : OPEN_END;
        if (start > rtEnd || end < rtStart) continue;
        rows.push({
          realtime_start: start > rtStart ? start : rtStart,
          realtime_end: end < rtEnd ? end : rtEnd,
          date: isoDay(dateMs),
          value: v.value ?? '.',
        });
      }
    }
    return rows;
  }
}

const XML_PROLOG = '<?xml version="1.0" encoding="utf-8" ?>';

/** The format the request asked for: `json`, else FRED's default `xml` (an unknown value is refused in that format). */
function fileTypeOf(ctx: RequestContext): 'json' | 'xml' {
  return ctx.query.get('file_type') === 'json' ? 'json' : 'xml';
}

/** FRED's error body: `{"error_code","error_message"}` in JSON, `<error code message/>` in XML. */
function fredError(status: number, message: string, fileType: 'json' | 'xml'): Reply {
  if (fileType === 'json') return jsonReply(status, { error_code: status, error_message: message });
  return xmlReply(status, `<error ${xmlAttributes({ code: status, message })} />`);
}

function xmlReply(status: number, element: string): Reply {
  return { status, headers: { 'content-type': 'text/xml; charset=UTF-8' }, body: `${XML_PROLOG}\n${element}\n` };
}

function xmlAttributes(values: object): string {
  return Object.entries(values as Record<string, string | number>)
    .map(([name, value]) => `${name}="${String(value).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}"`)
    .join(' ');
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` naming a real day (`2024-02-30` is refused). */
function validDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isFinite(ms) && isoDay(ms) === text;
}

function intParam(text: string | null, fallback: number): number | undefined {
  if (text === null) return fallback;
  return /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}
