import { Agent, request, type Dispatcher } from 'undici';
import { BannedError, RateLimitedError, systemClock, TransientError, type Clock } from '@tickfleet/core';
import { parseBannedUntilMs, parseRetryAfterMs, parseVenueErrorBody } from './internal/venue-error-body.js';
import type { RequestHooks } from './types.js';
import { VenueRejectedError } from './venue-rejected-error.js';

/** The defaults of {@link VenueHttpClientOptions} and {@link VenueErrorPolicy}. */
export const VENUE_HTTP_DEFAULTS = Object.freeze({
  /** Per-request timeout (connect + headers + body). */
  timeoutMs: 10_000,
  /** Window a used-weight header counts in. */
  usedWeightWindowMs: 60_000,
  /** Ban length assumed for a 418 whose body and headers give no end. */
  banFallbackMs: 120_000,
});

/** How a venue's limit errors are turned into retry times. */
export interface VenueErrorPolicy {
  /** Wait after a 429 that carries no `Retry-After` (venues with an aligned window wait for its end instead). */
  rateLimitFallbackMs: number;
  /**
   * Length of the venue's clock-aligned limit window, when it has one (Binance: 60 000). `Retry-After`
   * is whole seconds, rounded, so it can only place the window end within a second; when the aligned
   * window end falls inside that second, it is the exact answer and is used instead.
   */
  alignedWindowMs?: number;
  /** Ban length assumed for a 418 whose body and headers give no end. @defaultValue VENUE_HTTP_DEFAULTS.banFallbackMs */
  banFallbackMs?: number;
}

/** The policy of a venue whose limit window is clock-aligned: a 429 is retried at the window's end. */
export function alignedWindowPolicy(windowMs: number): VenueErrorPolicy {
  return { rateLimitFallbackMs: windowMs, alignedWindowMs: windowMs };
}

export interface VenueHttpClientOptions {
  venue: string;
  hooks?: RequestHooks;
  /** Per-request timeout (connect + headers + body). @defaultValue VENUE_HTTP_DEFAULTS.timeoutMs */
  timeoutMs?: number;
  /** @defaultValue systemClock */
  clock?: Clock;
  /** Response header carrying the used weight (matched case-insensitively), e.g. `x-mbx-used-weight-1m`. */
  usedWeightHeader?: string;
  /** Window the used-weight header counts in; windows are clock-aligned. @defaultValue VENUE_HTTP_DEFAULTS.usedWeightWindowMs */
  usedWeightWindowMs?: number;
  /**
   * For venues that report their usage in other headers than one used-weight count (Alpaca's
   * `X-RateLimit-Limit/Remaining/Reset`): the used weight and the start of the window it counts in,
   * read from an answer's headers. Used instead of `usedWeightHeader` when given.
   */
  readUsage?: (headers: ResponseHeaders, sentAtMs: number) => { usedWeight: number; windowStartMs: number } | undefined;
  errorPolicy: VenueErrorPolicy;
}

/** Response headers, read by name (case-insensitively), as `Headers.get` reads them. */
export interface ResponseHeaders {
  get(name: string): string | null;
}

export interface HttpRequest {
  /** Endpoint name from the adapter's weights table. */
  endpoint: string;
  weight: number;
  url: string;
  signal?: AbortSignal | undefined;
  /** Extra request headers (credentials of venues that take them in headers, e.g. Alpaca's `APCA-API-KEY-ID`); never logged. */
  headers?: Record<string, string>;
  /** The part of the venue with a limit of its own (Xetra: the market); handed to `beforeRequest`. */
  scope?: string;
  /** A JSON body, sent as a POST (Polymarket's batch `POST /books`); absent: a GET. */
  jsonBody?: string;
}

export interface HttpResponse {
  status: number;
  headers: ResponseHeaders;
  body: Buffer;
  /** Clock time the request was sent. */
  sentAtMs: number;
  /** Clock time the body was fully read. */
  receivedAtMs: number;
}

/** Redirects followed per request (a venue API rarely sends one; a file host may). */
const MAX_REDIRECTS = 5;

/**
 * The connection pools of every venue client: undici keeps connections alive per origin, so paging
 * through a venue reuses one socket, and one venue's slow answers never hold another origin's.
 */
const dispatcher: Dispatcher = new Agent({ connect: { timeout: 10_000 } });

/**
 * GET-only HTTP client shared by the adapters. Every request passes through the worker's
 * `beforeRequest` hook (budget spend) and `afterResponse` hook (budget correction, AIMD inputs),
 * is bounded by a timeout, and every failure leaves as a typed @tickfleet/core error:
 * 429 -> RateLimitedError, 418 -> BannedError, 5xx/timeout/connection errors -> TransientError,
 * other 4xx -> VenueRejectedError (an UnrecoverableError).
 *
 * Requests go through undici's `request`, not the global `fetch` (the same undici underneath):
 * `fetch` wraps every answer in WHATWG streams, a `Headers` object and an AbortController of its
 * own, which cost ~290 µs of CPU per small JSON request on this project's machine against ~80 µs
 * (`node` micro-benchmark, 5,000 requests, 4 in flight, client and server in one process); the
 * timeouts are undici's own timers instead of an AbortController and a timer per request (they
 * tick every half second, so a timeout fires up to about a second late).
 * Redirects are followed here (`fetch` did that), without credentials to another origin.
 */
export class VenueHttpClient {
  readonly venue: string;
  private readonly hooks: RequestHooks;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly usedWeightHeader: string | undefined;
  private readonly usedWeightWindowMs: number;
  private readonly readUsage: VenueHttpClientOptions['readUsage'];
  private readonly policy: VenueErrorPolicy;

  constructor(options: VenueHttpClientOptions) {
    this.venue = options.venue;
    this.hooks = options.hooks ?? {};
    this.timeoutMs = options.timeoutMs ?? VENUE_HTTP_DEFAULTS.timeoutMs;
    this.clock = options.clock ?? systemClock;
    this.usedWeightHeader = options.usedWeightHeader?.toLowerCase();
    this.usedWeightWindowMs = options.usedWeightWindowMs ?? VENUE_HTTP_DEFAULTS.usedWeightWindowMs;
    this.readUsage = options.readUsage;
    this.policy = options.errorPolicy;
  }

  /** Sends the request; resolves only for 2xx, throws typed errors otherwise. */
  async get(req: HttpRequest): Promise<HttpResponse> {
    req.signal?.throwIfAborted();
    await this.hooks.beforeRequest?.({
      venue: this.venue,
      endpoint: req.endpoint,
      weight: req.weight,
      ...(req.scope !== undefined ? { scope: req.scope } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    const sentAtMs = this.clock.now();
    const started = this.clock.monotonic();
    let answer: { status: number; headers: ResponseHeaders; body: Buffer };
    try {
      answer = await this.send(req);
    } catch (err) {
      const latencyMs = this.clock.monotonic() - started;
      await this.hooks.afterResponse?.({ venue: this.venue, endpoint: req.endpoint, status: 0, latencyMs });
      if (req.signal?.aborted) throw req.signal.reason;
      throw this.transportError(err, req);
    }
    const latencyMs = this.clock.monotonic() - started;
    const receivedAtMs = this.clock.now();
    const { status, headers, body } = answer;
    const usage = this.readUsage ? this.readUsage(headers, sentAtMs) : this.readUsedWeight(headers, sentAtMs);
    await this.hooks.afterResponse?.({
      venue: this.venue,
      endpoint: req.endpoint,
      status,
      latencyMs,
      ...(usage === undefined ? {} : { usedWeight: usage.usedWeight, usedWeightWindowStartMs: usage.windowStartMs }),
    });
    if (status >= 200 && status < 300) return { status, headers, body, sentAtMs, receivedAtMs };
    throw this.statusError(status, headers, body, receivedAtMs, req);
  }

  /**
   * One GET and its whole body, following redirects. `headersTimeout` bounds the wait for the
   * answer and `bodyTimeout` each pause while its body arrives; the caller's signal aborts either.
   */
  private async send(req: HttpRequest): Promise<{ status: number; headers: ResponseHeaders; body: Buffer }> {
    let url = req.url;
    let headers: Record<string, string> = {
      accept: 'application/json, */*',
      ...(req.jsonBody === undefined ? {} : { 'content-type': 'application/json' }),
      ...req.headers,
    };
    for (let hop = 0; ; hop++) {
      const res = await request(url, {
        method: req.jsonBody === undefined ? 'GET' : 'POST',
        ...(req.jsonBody === undefined ? {} : { body: req.jsonBody }),
        headers,
        dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        ...(req.signal ? { signal: req.signal } : {}),
      });
      const location = res.statusCode >= 300 && res.statusCode < 400 ? firstHeader(res.headers.location) : undefined;
      if (location === undefined || hop >= MAX_REDIRECTS) {
        return { status: res.statusCode, headers: new UndiciHeaders(res.headers), body: Buffer.from(await res.body.arrayBuffer()) };
      }
      await res.body.dump();
      const next = new URL(location, url);
      // Credentials (Alpaca's key headers, Finnhub's token) only ever go to the origin they were given for.
      if (next.origin !== new URL(url).origin) headers = { accept: headers.accept ?? 'application/json, */*' };
      url = next.href;
    }
  }

  private readUsedWeight(headers: ResponseHeaders, sentAtMs: number): { usedWeight: number; windowStartMs: number } | undefined {
    if (!this.usedWeightHeader) return undefined;
    const raw = headers.get(this.usedWeightHeader);
    if (raw === null) return undefined;
    const n = Number(raw.trim());
    if (!Number.isSafeInteger(n) || n < 0) return undefined;
    // The venue counts a request when it arrives, i.e. close to when it was sent.
    return { usedWeight: n, windowStartMs: Math.floor(sentAtMs / this.usedWeightWindowMs) * this.usedWeightWindowMs };
  }

  private transportError(err: unknown, req: HttpRequest): TransientError {
    const code = (err as { code?: string } | null)?.code;
    if (code !== undefined && TIMEOUT_CODES.has(code)) {
      // Named as AbortSignal.timeout names its reason: failure causes and poll statistics count it as a timeout.
      const timeout = Object.assign(new Error(`${this.venue} ${req.endpoint}: ${(err as Error).message}`, { cause: err }), { name: 'TimeoutError' });
      return new TransientError(this.venue, `${this.venue} ${req.endpoint} timed out after ${this.timeoutMs} ms`, undefined, { cause: timeout });
    }
    const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause;
    const detail = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return new TransientError(this.venue, `${this.venue} ${req.endpoint} request failed: ${detail}`, undefined, { cause: err });
  }

  /** Maps a non-2xx answer to a typed error. Never throws anything else, whatever the body holds. */
  statusError(status: number, headers: ResponseHeaders, body: Buffer, nowMs: number, req: Pick<HttpRequest, 'endpoint'>): Error {
    const parsed = parseVenueErrorBody(body.toString('utf8'));
    const retryAfterMs = parseRetryAfterMs(headers.get('retry-after'), nowMs);
    const venueText = `${parsed.code === undefined ? '' : `code ${parsed.code}: `}${parsed.message ?? ''}`;
    if (status === 418) {
      const untilMs =
        parseBannedUntilMs(parsed.message) ??
        (retryAfterMs === undefined ? nowMs + (this.policy.banFallbackMs ?? VENUE_HTTP_DEFAULTS.banFallbackMs) : nowMs + retryAfterMs);
      return new BannedError(this.venue, untilMs, `${this.venue} banned this client until ${new Date(untilMs).toISOString()} (${venueText || 'HTTP 418'})`);
    }
    if (status === 429) {
      const retryAtMs = this.retryAtAfter429(retryAfterMs, nowMs);
      return new RateLimitedError(
        this.venue,
        retryAtMs,
        `${this.venue} ${req.endpoint} rate limited (HTTP 429${venueText ? `, ${venueText}` : ''}); retry at ${new Date(retryAtMs).toISOString()}`,
        { fromVenue: retryAfterMs !== undefined },
      );
    }
    if (status >= 500) {
      return new TransientError(this.venue, `${this.venue} ${req.endpoint} answered HTTP ${status}${venueText ? ` (${venueText})` : ''}`, status);
    }
    return new VenueRejectedError(this.venue, status, parsed.code, parsed.message);
  }

  private retryAtAfter429(retryAfterMs: number | undefined, nowMs: number): number {
    const windowMs = this.policy.alignedWindowMs;
    const windowEnd = windowMs === undefined ? undefined : Math.floor(nowMs / windowMs) * windowMs + windowMs;
    if (retryAfterMs === undefined) return windowEnd ?? nowMs + this.policy.rateLimitFallbackMs;
    const candidate = nowMs + retryAfterMs;
    if (windowEnd !== undefined && Math.abs(windowEnd - candidate) < 1000) return windowEnd;
    return candidate;
  }
}

/** undici's error codes for a connect, answer or body that took longer than allowed. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

type RawHeaders = Record<string, string | string[] | undefined>;

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** undici's header record (names lower-cased) read like `Headers`: repeated values joined by ", ". */
class UndiciHeaders implements ResponseHeaders {
  constructor(private readonly raw: RawHeaders) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}
