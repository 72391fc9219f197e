import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '@tickfleet/core';
import { DEFAULT_BINANCE_SYMBOLS } from '../data/symbols.js';
import { DEFAULT_SEED, STREAM_VENUES, type Scenario, type StreamScenario, type StreamVenueName } from '../scenario.js';
import type { StreamStats } from '../stats.js';
import { BINANCE_PING_INTERVAL_MS, BinanceWsEmulation } from './binance-ws-emulation.js';
import { KrakenWsEmulation } from './kraken-ws-emulation.js';
import { lastClosedTick } from './stream-book-model.js';
import { freshStreamStats, StreamConnection, type StreamEnv } from './stream-connection.js';

/** Binance: "300 connections per attempt every 5 minutes per IP"; every client of the emulation is one IP. */
const DEFAULT_CONNECTION_ATTEMPTS: Record<StreamVenueName, { limit: number; windowMs: number } | undefined> = {
  binance: { limit: 300, windowMs: 300_000 },
  kraken: undefined,
};
/** How often the hub looks for newly closed 100 ms ticks. */
const POLL_MS = 20;
/** A clock jump beyond this (a ManualClock moved by hours) restarts the tape instead of replaying every tick. */
const MAX_CATCH_UP_TICKS = 600;

/**
 * The WebSocket side of the mock venue: takes the HTTP server's upgrades for `/binance/ws…`,
 * `/binance/stream` and `/kraken/v2`, enforces connection-attempt limits and outages, and drives both
 * emulations from one poll of the clock so every connection sees the same tape.
 */
export class WsHub {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly binance: BinanceWsEmulation;
  private readonly kraken: KrakenWsEmulation;
  private counters: Record<StreamVenueName, StreamStats> = freshAll();
  private readonly attempts: Record<StreamVenueName, number[]> = { binance: [], kraken: [] };
  private readonly sockets = new Set<WebSocket>();
  private readonly poll: NodeJS.Timeout;
  private readonly pinger: NodeJS.Timeout;
  private lastTick: number;
  private serial = 0;

  constructor(
    private readonly clock: Clock,
    private readonly scenario: () => Scenario,
    /** Whether `venue`'s prefix is in an outage window now (upgrades are dropped like its HTTP requests). */
    private readonly down: (venue: StreamVenueName) => boolean,
  ) {
    this.binance = new BinanceWsEmulation(() => this.scenario().venues?.binance?.symbols ?? DEFAULT_BINANCE_SYMBOLS);
    this.lastTick = lastClosedTick(clock.now());
    this.kraken = new KrakenWsEmulation(() => this.seed(), this.lastTick);
    this.poll = setInterval(() => this.publish(), POLL_MS);
    this.pinger = setInterval(() => this.binance.ping(), BINANCE_PING_INTERVAL_MS);
    this.poll.unref();
    this.pinger.unref();
  }

  /** Handles an upgrade request; false when its path is none of the stream endpoints (the caller answers 404). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://mock');
    const venue: StreamVenueName | undefined = url.pathname.startsWith('/binance/') ? 'binance' : url.pathname === '/kraken/v2' ? 'kraken' : undefined;
    if (!venue) return false;
    const path = url.pathname.slice(venue.length + 1);
    if (this.down(venue)) {
      socket.destroy();
      return true;
    }
    const refusal = venue === 'binance' ? this.binance.refusal(path, url.searchParams) : undefined;
    if (refusal) {
      refuse(socket, 400, { code: -1100, msg: refusal });
      return true;
    }
    if (!this.admit(venue)) {
      this.counters[venue].connectionsRefused += 1;
      refuse(socket, 429, { code: -1003, msg: 'Too many connection attempts; the limit is per IP and window.' });
      return true;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.open(venue, ws, path, url.searchParams));
    return true;
  }

  stats(): Record<StreamVenueName, StreamStats> {
    return structuredClone(this.counters);
  }

  reset(): void {
    const open = { binance: this.counters.binance.openConnections, kraken: this.counters.kraken.openConnections };
    this.counters = freshAll();
    this.counters.binance.openConnections = open.binance;
    this.counters.kraken.openConnections = open.kraken;
    this.attempts.binance = [];
    this.attempts.kraken = [];
  }

  async stop(): Promise<void> {
    clearInterval(this.poll);
    clearInterval(this.pinger);
    for (const ws of this.sockets) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private open(venue: StreamVenueName, ws: WebSocket, path: string, query: URLSearchParams): void {
    this.serial += 1;
    const env: StreamEnv = {
      settings: () => this.settings(venue),
      stats: () => this.counters[venue],
      seed: () => this.seed(),
      now: () => this.clock.now(),
    };
    const c = new StreamConnection(ws, venue, this.serial, env);
    const stats = this.counters[venue];
    stats.connections += 1;
    stats.openConnections += 1;
    this.sockets.add(ws);
    ws.on('close', () => {
      this.sockets.delete(ws);
      this.counters[venue].openConnections = Math.max(0, this.counters[venue].openConnections - 1);
    });
    // a client that vanishes mid-write surfaces as an error event; its close event does the bookkeeping
    ws.on('error', () => ws.terminate());
    if (venue === 'binance') stats.subscriptions += this.binance.accept(c, path, query);
    else this.kraken.accept(c);
  }

  /** A sliding window of accepted attempts per venue (the scenario's clock, like the REST limits). */
  private admit(venue: StreamVenueName): boolean {
    const limit = this.settings(venue).connectionAttempts ?? DEFAULT_CONNECTION_ATTEMPTS[venue];
    if (!limit) return true;
    const now = this.clock.now();
    const list = this.attempts[venue];
    while (list.length > 0 && (list[0] ?? now) <= now - limit.windowMs) list.shift();
    if (list.length >= limit.limit) return false;
    list.push(now);
    return true;
  }

  private publish(): void {
    const closed = lastClosedTick(this.clock.now());
    if (closed <= this.lastTick) return;
    const from = closed - this.lastTick > MAX_CATCH_UP_TICKS ? closed - 1 : this.lastTick;
    this.lastTick = closed;
    this.binance.onTicks(from, closed, this.seed());
    this.kraken.onTicks(from, closed);
  }

  private settings(venue: StreamVenueName): StreamScenario {
    return this.scenario().streams?.[venue] ?? {};
  }

  private seed(): number {
    return this.scenario().seed ?? DEFAULT_SEED;
  }
}

function freshAll(): Record<StreamVenueName, StreamStats> {
  return Object.fromEntries(STREAM_VENUES.map((v) => [v, freshStreamStats()])) as Record<StreamVenueName, StreamStats>;
}

function refuse(socket: Duplex, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const reason = status === 429 ? 'Too Many Requests' : 'Bad Request';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}
