import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { LISTEN_DEFAULTS, systemClock, TickfleetError, ValidationError, type Clock } from '@tickfleet/core';
import { hash32, unitFloat } from './data/random.js';
import type { Reply } from './internal/reply.js';
import { ScopeLimits } from './internal/scope-limits.js';
import { VenueCounters } from './internal/venue-counters.js';
import { isRoute, type RequestContext, type Route, type VenueEmulation } from './internal/venue-emulation.js';
import { CounterLimiter } from './internal/counter-limiter.js';
import { SlidingWindowLimiter } from './internal/sliding-window-limiter.js';
import { WindowLimiter, type VenueLimiter } from './internal/window-limiter.js';
import {
  DEFAULT_SEED,
  emulatedLimit,
  gammaLimit,
  booksLimit,
  type EmulatedLimit,
  mergeScenario,
  MOCK_VENUES,
  parseScenario,
  DEFAULT_ERROR_STATUSES,
  DEFAULT_TIMEOUT_HOLD_MS,
  type Latency,
  type MockVenueName,
  type Scenario,
  type TimeWindow,
  type VenueScenario,
} from './scenario.js';
import type { LimitGroupStats, MockVenueStats, VenueStats } from './stats.js';
import { AlpacaEmulation } from './venues/alpaca-emulation.js';
import { BinanceEmulation } from './venues/binance-emulation.js';
import { CoinbaseEmulation } from './venues/coinbase-emulation.js';
import { LimitlessEmulation } from './venues/limitless-emulation.js';
import { FinnhubEmulation } from './venues/finnhub-emulation.js';
import { FredEmulation } from './venues/fred-emulation.js';
import { KrakenEmulation } from './venues/kraken-emulation.js';
import type { ServedBook } from './venues/served-books.js';
import { PolygonEmulation } from './venues/polygon-emulation.js';
import { PolymarketEmulation, type BookRequestRecord } from './venues/polymarket-emulation.js';
import { WsHub } from './venues/ws-hub.js';
import { XetraEmulation } from './venues/xetra-emulation.js';

/** How long the server keeps an idle keep-alive socket, and how long it tells clients it does (far shorter). */
const SERVER_KEEP_ALIVE_MS = 30_000;
const ADVERTISED_KEEP_ALIVE_S = 5;
/** Options of startMockVenue. */
export interface MockVenueOptions {
  /** 0 picks a free port. @defaultValue {@link LISTEN_DEFAULTS.port} */
  port?: number;
  /** @defaultValue {@link LISTEN_DEFAULTS.host} */
  host?: string;
  /** Initial scenario (validated; relative windows start now). @defaultValue {} */
  scenario?: Scenario;
  /** Time source of data, windows and scenario windows (timers always run in real time). @defaultValue systemClock */
  clock?: Clock;
}

/** A running emulation of every venue on one HTTP server. */
export interface MockVenue {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** A connector's base URL for `venue`: `http://127.0.0.1:<port>/<venue>`. */
  baseUrl(venue: MockVenueName): string;
  stats(): MockVenueStats;
  /** Polymarket's book requests (`GET /book`, `POST /books`) since reset, oldest first: which tokens were asked for, when. */
  polymarketBookRequests(): readonly BookRequestRecord[];
  /** The book snapshots Kraken's Depth or Coinbase's book answered since reset, oldest first. */
  servedBooks(venue: 'kraken' | 'coinbase'): readonly ServedBook[];
  /** The current scenario (relative windows already resolved to absolute ones). */
  scenario(): Scenario;
  /** Validates and applies a patch (as `PATCH /_mock/scenario`); throws ValidationError naming the bad field. */
  patchScenario(patch: unknown): Scenario;
  /** Clears counters, windows and bans (as `POST /_mock/reset`); the scenario stays. */
  reset(): void;
  stop(): Promise<void>;
}

/** Binance bans persistent offenders; Polymarket's Cloudflare queues over sliding windows; Kraken keeps a call counter; the others refuse. */
function newLimiter(venue: MockVenueName): VenueLimiter {
  const limit = emulatedLimit(venue, undefined);
  if (venue === 'polymarket') return new SlidingWindowLimiter(limit, 'delay');
  // Limitless: at least 300 ms between calls, so one request per sliding 300 ms
  if (venue === 'limitless') return new SlidingWindowLimiter(limit, 'reject');
  if (venue === 'kraken') return new CounterLimiter(limit);
  return new WindowLimiter(limit, venue === 'binance' ? 'ban' : 'reject');
}
const VENUE_SET: ReadonlySet<string> = new Set(MOCK_VENUES);
const MAX_ADMIN_BODY_BYTES = 1 << 20;
const HEALTH_BODY = '{"status":"ok"}';

interface Pending {
  timer: NodeJS.Timeout;
  res: ServerResponse;
}

/**
 * The HTTP server behind startMockVenue. Order of the per-request pipeline, and so of what a request
 * can meet: outage (socket destroyed) -> storm (429) -> route (404/401 before any limit) -> the venue's
 * limiter (429, 418, or a delay) -> timeout hold -> injected 5xx -> the handler -> malformed rewrite ->
 * latency before the answer is written. Faults are drawn from hashes of (seed, venue, request serial),
 * so a scenario replays identically after a reset.
 */
export class MockVenueServer implements MockVenue {
  url = '';
  port = 0;
  private readonly server: Server;
  private readonly clock: Clock;
  private current: Scenario = {};
  private readonly polymarket = new PolymarketEmulation();
  private readonly kraken = new KrakenEmulation();
  private readonly coinbase = new CoinbaseEmulation();
  private readonly emulations: Record<MockVenueName, VenueEmulation> = {
    alpaca: new AlpacaEmulation(),
    binance: new BinanceEmulation(),
    coinbase: this.coinbase,
    finnhub: new FinnhubEmulation(),
    fred: new FredEmulation(),
    kraken: this.kraken,
    limitless: new LimitlessEmulation(),
    polygon: new PolygonEmulation(),
    polymarket: this.polymarket,
    xetra: new XetraEmulation(),
  };
  private readonly limiters: Record<MockVenueName, VenueLimiter>;
  /** Polymarket's Gamma API limit, apart from its CLOB limit (`limiters.polymarket`). */
  private readonly gamma = new SlidingWindowLimiter(gammaLimit(undefined), 'delay');
  /** Polymarket's CLOB batch `POST /books` limit, apart from `/book`'s. */
  private readonly books = new SlidingWindowLimiter(booksLimit(undefined), 'delay');
  private counters: Record<MockVenueName, VenueCounters>;
  /** Per venue, the limits of its scopes (Xetra markets), created at a scope's first request. */
  private scopes: Record<MockVenueName, Map<string, ScopeLimits>> = freshScopes();
  private readonly pending = new Set<Pending>();
  private readonly startedAtMs: number;
  private resetAtMs: number;
  private readonly streams: WsHub;

  constructor(options: MockVenueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.startedAtMs = this.clock.now();
    this.resetAtMs = this.startedAtMs;
    this.limiters = Object.fromEntries(MOCK_VENUES.map((v) => [v, newLimiter(v)])) as Record<MockVenueName, VenueLimiter>;
    this.counters = freshCounters();
    this.apply(mergeScenario({}, parseScenario(options.scenario ?? {}), this.clock.now()));
    // Idle keep-alive sockets are kept for SERVER_KEEP_ALIVE_MS but advertised as kept for
    // ADVERTISED_KEEP_ALIVE_S (see onRequest): undici closes an idle socket a second before the
    // advertised end, and with the two equal a client on a loaded machine (event loop late by more
    // than that second) reuses a socket the server is closing: ECONNRESET / UND_ERR_SOCKET and a
    // retried request, seen in busy suite runs. stop() closes every connection anyway.
    this.server = createServer({ keepAlive: true, keepAliveTimeout: SERVER_KEEP_ALIVE_MS }, (req, res) => this.onRequest(req, res));
    this.server.on('clientError', (_err, socket) => socket.destroy());
    this.streams = new WsHub(
      this.clock,
      () => this.current,
      (venue) => this.isDown(venue),
    );
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!this.streams.upgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
  }

  async listen(port: number = LISTEN_DEFAULTS.port, host: string = LISTEN_DEFAULTS.host): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    this.url = `http://${publicHost}:${this.port}`;
  }

  baseUrl(venue: MockVenueName): string {
    return `${this.url}/${venue}`;
  }

  scenario(): Scenario {
    return structuredClone(this.current);
  }

  patchScenario(patch: unknown): Scenario {
    this.apply(mergeScenario(this.current, parseScenario(patch), this.clock.now()));
    return this.scenario();
  }

  reset(): void {
    this.counters = freshCounters();
    this.scopes = freshScopes();
    for (const v of MOCK_VENUES) {
      this.limiters[v].reset();
      this.emulations[v].reset?.();
    }
    this.gamma.reset();
    this.books.reset();
    this.streams.reset();
    this.resetAtMs = this.clock.now();
  }

  polymarketBookRequests(): readonly BookRequestRecord[] {
    return this.polymarket.bookRequests();
  }

  servedBooks(venue: 'kraken' | 'coinbase'): readonly ServedBook[] {
    return this[venue].servedBooks.all();
  }

  stats(): MockVenueStats {
    const now = this.clock.now();
    const venues = {} as Record<MockVenueName, VenueStats>;
    for (const v of MOCK_VENUES) {
      const c = this.counters[v];
      const l = this.limiters[v];
      const { maxConcurrent } = emulatedLimit(v, this.current.venues?.[v]?.limit);
      venues[v] = {
        requests: c.requests,
        weightUsed: l.weightUsed + (v === 'polymarket' ? this.gamma.weightUsed + this.books.weightUsed : 0),
        limit: l.limit,
        windowMs: l.windowMs,
        maxWindowWeight: l.maxWindowWeight,
        currentWindowWeight: l.usedWeight(now),
        overLimitRequests: c.overLimitRequests,
        responses2xx: c.responses2xx,
        responses4xx: c.responses4xx,
        responses429: c.responses429,
        responses418: c.responses418,
        responses5xx: c.responses5xx,
        delayedRequests: c.delayedRequests,
        timeouts: c.timeouts,
        outageDrops: c.outageDrops,
        malformedResponses: c.malformedResponses,
        stormResponses: c.stormResponses,
        bannedUntilMs: l.bannedUntil(now),
        bans: l.banCount,
        latency: c.latency(),
        windows: l.history(),
        ...(this.emulations[v].extraStats || maxConcurrent !== undefined
          ? {
              extra: {
                ...this.emulations[v].extraStats?.(),
                ...(maxConcurrent === undefined ? {} : { maxConcurrent, maxInFlight: c.maxInFlight, concurrencyRejected: c.concurrencyRejected }),
              },
            }
          : {}),
      };
      if (this.scopes[v].size > 0)
        venues[v].scopes = Object.fromEntries([...this.scopes[v]].sort(([a], [b]) => a.localeCompare(b)).map(([s, x]) => [s, x.stats(now)]));
    }
    const clob = this.limiters.polymarket;
    if (clob instanceof SlidingWindowLimiter)
      venues.polymarket.groups = { clob: groupStats(clob, now), books: groupStats(this.books, now), gamma: groupStats(this.gamma, now) };
    return { startedAtMs: this.startedAtMs, resetAtMs: this.resetAtMs, venues, streams: this.streams.stats() };
  }

  async stop(): Promise<void> {
    for (const p of this.pending) {
      clearTimeout(p.timer);
      p.res.destroy();
    }
    this.pending.clear();
    await this.streams.stop();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private apply(scenario: Scenario): void {
    this.current = scenario;
    for (const v of MOCK_VENUES) {
      this.limiters[v].update(emulatedLimit(v, scenario.venues?.[v]?.limit));
      for (const s of this.scopes[v].values()) s.limiter.update(emulatedLimit(v, scenario.venues?.[v]?.limit));
      this.emulations[v].invalidate();
    }
    this.gamma.update(gammaLimit(scenario.venues?.polymarket?.gammaLimit));
    this.books.update(booksLimit(scenario.venues?.polymarket?.booksLimit));
  }

  /** Whether `venue` (or the whole server) is in an outage window now. */
  private isDown(venue: MockVenueName): boolean {
    const nowMs = this.clock.now();
    return inWindows(this.current.outages, nowMs) || inWindows(this.current.venues?.[venue]?.outages, nowMs);
  }

  private get seed(): number {
    return this.current.seed ?? DEFAULT_SEED;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    // Set by hand, Node writes neither header itself (and keeps honouring a client's `close`).
    if (!/\bclose\b/i.test(req.headers.connection ?? '')) {
      res.setHeader('Connection', 'keep-alive');
      res.setHeader('Keep-Alive', `timeout=${ADVERTISED_KEEP_ALIVE_S}`);
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? '' : url.slice(q + 1);
    const slash = pathname.indexOf('/', 1);
    const prefix = slash < 0 ? pathname.slice(1) : pathname.slice(1, slash);
    const rest = slash < 0 ? '' : pathname.slice(slash);
    if (prefix === '_mock') {
      this.admin(req, res, rest);
    } else if (VENUE_SET.has(prefix) && req.method === 'POST') {
      readBody(req).then(
        (body) => this.venueRequest(prefix as MockVenueName, req, res, rest, search, body),
        (err: Error) => writeReply(res, { status: 413, headers: {}, body: JSON.stringify({ error: err.message }) }),
      );
    } else if (VENUE_SET.has(prefix)) {
      this.venueRequest(prefix as MockVenueName, req, res, rest, search, '');
    } else {
      writeReply(res, { status: 404, headers: {}, body: `{"error":"no venue at ${JSON.stringify(pathname).slice(1, -1)}"}` });
    }
  }

  private venueRequest(venue: MockVenueName, req: IncomingMessage, res: ServerResponse, path: string, search: string, body: string): void {
    const arrival = performance.now();
    const nowMs = this.clock.now();
    const c = this.counters[venue];
    c.requests += 1;
    const serial = c.requests;
    const settings: VenueScenario = this.current.venues?.[venue] ?? {};
    if (inWindows(this.current.outages, nowMs) || inWindows(settings.outages, nowMs)) {
      // one server hosts every venue, so "connection refused" is emulated by dropping the connection unanswered
      c.outageDrops += 1;
      req.socket.destroy();
      return;
    }
    const limiter = this.limiters[venue];
    const ctx: RequestContext = {
      venue,
      serial,
      nowMs,
      method: req.method ?? 'GET',
      path,
      query: new URLSearchParams(search),
      body,
      headers: req.headers,
      baseUrl: `http://${req.headers.host ?? `127.0.0.1:${this.port}`}/${venue}`,
      seed: this.seed,
      settings,
      limit: emulatedLimit(venue, settings.limit),
      usedWeight: () => limiter.usedWeight(this.clock.now()),
    };
    const emulation = this.emulations[venue];
    const send = (reply: Reply): void => this.send(ctx, c, res, reply, arrival);
    const storm = settings.storm;
    if (storm && nowMs >= storm.fromMs && nowMs < storm.toMs) {
      c.stormResponses += 1;
      send(emulation.tooManyRequests(ctx, storm.toMs - nowMs, 'storm'));
      return;
    }
    const routed = emulation.route(ctx);
    if (!isRoute(routed)) {
      send(routed);
      return;
    }
    const maxConcurrent = ctx.limit.enabled ? ctx.limit.maxConcurrent : undefined;
    if (maxConcurrent !== undefined && c.inFlight >= maxConcurrent) {
      c.overLimitRequests += 1;
      c.concurrencyRejected += 1;
      send(emulation.tooManyRequests(ctx, ctx.limit.windowMs, 'limit'));
      return;
    }
    const scope = routed.scope === undefined ? undefined : this.scopeLimits(venue, routed.scope, ctx.limit);
    if (scope) scope.requests += 1;
    const decision = scope
      ? scope.limiter.decide(nowMs, routed.weight)
      : (routed.limitGroup === 'gamma' ? this.gamma : routed.limitGroup === 'books' ? this.books : limiter).decide(nowMs, routed.weight);
    if (scope && decision.kind === 'accept') {
      scope.accepted(nowMs);
      if (limiter instanceof WindowLimiter) limiter.record(nowMs, routed.weight);
    }
    switch (decision.kind) {
      case 'reject':
        c.overLimitRequests += 1;
        if (scope) scope.overLimitRequests += 1;
        send(emulation.tooManyRequests(ctx, decision.retryAfterMs, 'limit'));
        return;
      case 'ban':
        c.overLimitRequests += 1;
        send(emulation.banned(ctx, decision.bannedUntilMs));
        return;
      case 'accept':
        // in flight from acceptance until the answer is written or the connection goes
        c.inFlight += 1;
        c.maxInFlight = Math.max(c.maxInFlight, c.inFlight);
        res.once('close', () => (c.inFlight -= 1));
        if (decision.delayMs > 0) {
          c.delayedRequests += 1;
          c.overLimitRequests += 1;
          this.later(decision.delayMs, res, () => this.serve(ctx, c, res, routed, emulation, arrival));
        } else {
          this.serve(ctx, c, res, routed, emulation, arrival);
        }
        return;
    }
  }

  private scopeLimits(venue: MockVenueName, scope: string, limit: EmulatedLimit): ScopeLimits {
    let s = this.scopes[venue].get(scope);
    if (!s) {
      s = new ScopeLimits(limit);
      this.scopes[venue].set(scope, s);
    }
    return s;
  }

  private serve(ctx: RequestContext, c: VenueCounters, res: ServerResponse, route: Route, emulation: VenueEmulation, arrival: number): void {
    ctx.nowMs = this.clock.now();
    const { settings, venue, serial, seed } = ctx;
    const timeoutRate = settings.timeoutRate ?? 0;
    if (timeoutRate > 0 && unitFloat('timeout', venue, serial, seed) < timeoutRate) {
      c.timeouts += 1;
      this.hold(res, settings.timeoutMs ?? DEFAULT_TIMEOUT_HOLD_MS);
      return;
    }
    const errorRate = settings.errorRate ?? 0;
    if (errorRate > 0 && unitFloat('error', venue, serial, seed) < errorRate) {
      const statuses = settings.errorStatuses ?? DEFAULT_ERROR_STATUSES;
      const status = statuses[hash32('status', venue, serial, seed) % statuses.length] ?? 500;
      this.send(ctx, c, res, emulation.serverError(ctx, status), arrival);
      return;
    }
    let reply = route.handle();
    const malformedRate = settings.malformedRate ?? 0;
    if (reply.status < 300 && malformedRate > 0 && unitFloat('malformed', venue, serial, seed) < malformedRate) {
      reply = emulation.malformed(ctx, reply, hash32('malformed-kind', venue, serial, seed) % 2 === 0 ? 'truncated' : 'wrong-shape');
      c.malformedResponses += 1;
    }
    this.send(ctx, c, res, reply, arrival);
  }

  /** Counts the answer as decided, then writes it after the venue's latency. */
  private send(ctx: RequestContext, c: VenueCounters, res: ServerResponse, reply: Reply, arrival: number): void {
    c.countStatus(reply.status);
    const latencyMs = drawLatency(ctx.settings.latencyMs, ctx.venue, ctx.serial, ctx.seed) + (reply.delayMs ?? 0);
    const write = (): void => {
      writeReply(res, reply);
      c.recordLatency(performance.now() - arrival);
    };
    if (latencyMs > 0) this.later(latencyMs, res, write);
    else write();
  }

  private later(ms: number, res: ServerResponse, fn: () => void): void {
    const entry: Pending = {
      res,
      timer: setTimeout(() => {
        this.pending.delete(entry);
        fn();
      }, ms),
    };
    this.pending.add(entry);
  }

  /** Never answers: the socket is destroyed after `ms`, or released as soon as the client gives up. */
  private hold(res: ServerResponse, ms: number): void {
    const entry: Pending = {
      res,
      timer: setTimeout(() => {
        this.pending.delete(entry);
        res.destroy();
      }, ms),
    };
    this.pending.add(entry);
    res.once('close', () => {
      clearTimeout(entry.timer);
      this.pending.delete(entry);
    });
  }

  private admin(req: IncomingMessage, res: ServerResponse, path: string): void {
    const method = req.method ?? 'GET';
    const json = (status: number, body: unknown): void => writeReply(res, { status, headers: {}, body: JSON.stringify(body) });
    if (path === '/health' && method === 'GET') {
      writeReply(res, { status: 200, headers: {}, body: HEALTH_BODY });
    } else if (path === '/stats' && method === 'GET') {
      json(200, this.stats());
    } else if (path === '/reset' && method === 'POST') {
      this.reset();
      json(200, { ok: true, resetAtMs: this.resetAtMs });
    } else if (path === '/scenario' && method === 'GET') {
      json(200, this.scenario());
    } else if (path === '/scenario' && method === 'PATCH') {
      readBody(req).then(
        (text) => {
          let patch: unknown;
          try {
            patch = JSON.parse(text);
          } catch {
            json(400, { error: 'invalid PATCH /_mock/scenario body: expected a JSON object', code: 'E_VALIDATION' });
            return;
          }
          try {
            json(200, this.patchScenario(patch));
          } catch (err) {
            if (!(err instanceof TickfleetError)) throw err;
            json(400, { error: err.message, code: err.code, ...(err instanceof ValidationError ? { field: err.field } : {}) });
          }
        },
        (err: Error) => json(413, { error: err.message }),
      );
    } else {
      json(404, { error: `no admin endpoint ${method} /_mock${path}` });
    }
  }
}

/** Starts the emulation of every venue on one HTTP server. */
export async function startMockVenue(options: MockVenueOptions = {}): Promise<MockVenue> {
  const server = new MockVenueServer(options);
  await server.listen(options.port ?? LISTEN_DEFAULTS.port, options.host ?? LISTEN_DEFAULTS.host);
  return server;
}

function groupStats(l: SlidingWindowLimiter, nowMs: number): LimitGroupStats {
  return {
    limit: l.limit,
    windowMs: l.windowMs,
    sliding: true,
    weightUsed: l.weightUsed,
    maxWindowWeight: l.maxWindowWeight,
    currentWindowWeight: l.usedWeight(nowMs),
    overLimitRequests: l.overLimit,
    delayedRequests: l.delayed,
    windows: l.history(),
  };
}

function freshCounters(): Record<MockVenueName, VenueCounters> {
  return Object.fromEntries(MOCK_VENUES.map((v) => [v, new VenueCounters()])) as Record<MockVenueName, VenueCounters>;
}

function freshScopes(): Record<MockVenueName, Map<string, ScopeLimits>> {
  return Object.fromEntries(MOCK_VENUES.map((v) => [v, new Map<string, ScopeLimits>()])) as Record<MockVenueName, Map<string, ScopeLimits>>;
}

function inWindows(windows: readonly TimeWindow[] | undefined, nowMs: number): boolean {
  if (!windows) return false;
  for (const w of windows) if (nowMs >= w.fromMs && nowMs < w.toMs) return true;
  return false;
}

function drawLatency(latency: Latency | undefined, venue: string, serial: number, seed: number): number {
  if (latency === undefined) return 0;
  if (typeof latency === 'number') return latency;
  return latency.min + (latency.max - latency.min) * unitFloat('latency', venue, serial, seed);
}

function writeReply(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return;
  const body = reply.body;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    ...reply.headers,
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
  };
  res.writeHead(reply.status, headers);
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ADMIN_BODY_BYTES) {
        reject(new ValidationError('PATCH /_mock/scenario body', `at most ${MAX_ADMIN_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
