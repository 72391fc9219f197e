import type { IncomingHttpHeaders } from 'node:http';
import type { EmulatedLimit, MockVenueName, VenueScenario } from '../scenario.js';
import type { MalformedKind, Reply } from './reply.js';

/** What a venue emulation sees of one request. */
export interface RequestContext {
  venue: MockVenueName;
  /** 1-based serial number of the request at this venue since reset; seeds its deterministic faults. */
  serial: number;
  nowMs: number;
  method: string;
  /** Path after the venue prefix, e.g. `/api/v3/klines`. */
  path: string;
  query: URLSearchParams;
  /** The request body (POST), as text; empty without one. */
  body: string;
  headers: IncomingHttpHeaders;
  /** `http://host:port/<venue>` as the client addressed it (for Polygon's next_url). */
  baseUrl: string;
  seed: number;
  settings: VenueScenario;
  limit: EmulatedLimit;
  /** Weight accepted in the current window, read at call time. */
  usedWeight(): number;
}

/** A recognised endpoint: its weight, and the handler that builds the answer once the limiter accepts. */
export interface Route {
  weight: number;
  /** Set when the endpoint has a limit of its own apart from the venue's (Polymarket's Gamma API, its CLOB `POST /books`). */
  limitGroup?: 'gamma' | 'books';
  /**
   * The part of the venue with a limit of its own (Xetra: the market): the request is decided by that
   * scope's limiter, which allows the venue's whole limit per scope, instead of the venue's.
   */
  scope?: string;
  handle(): Reply;
}

/** One venue's API surface: routing, its own error bodies, and how its payloads spoil. */
export interface VenueEmulation {
  /** A Route, or a Reply given before any limit applies (unknown path, missing API key). */
  route(ctx: RequestContext): Route | Reply;
  /** The venue's 429. `cause` is `storm` for injected storms (which always carry Retry-After). */
  tooManyRequests(ctx: RequestContext, retryAfterMs: number, cause: 'limit' | 'storm'): Reply;
  /** The venue's ban answer (Binance 418); venues without bans never get here. */
  banned(ctx: RequestContext, bannedUntilMs: number): Reply;
  serverError(ctx: RequestContext, status: number): Reply;
  malformed(ctx: RequestContext, reply: Reply, kind: MalformedKind): Reply;
  /** The scenario changed (seed, symbols, …): drop memoised responses. */
  invalidate(): void;
  /** Counters reset (`POST /_mock/reset`): venues with limits of their own clear them. */
  reset?(): void;
  /** Ground-truth counters of limits the venue enforces itself (Finnhub's per-second cap), shown as `extra` in stats. */
  extraStats?(): Record<string, number>;
}

export function isRoute(value: Route | Reply): value is Route {
  return typeof (value as Route).handle === 'function';
}
