import type { RawData } from 'ws';
import { binanceInstrument } from '../data/symbols.js';
import { binanceAggTradeEvent, binanceDepthEvent, binanceModel, binanceTradeEvent } from './binance-ws-market.js';
import { rawText, type StreamConnection } from './stream-connection.js';
import { STREAM_TICK_MS } from './stream-book-model.js';

/** Documented spot stream limits (developers.binance.com, "WebSocket Streams for Binance", "WebSocket Limits"). */
export const BINANCE_MAX_STREAMS_PER_CONNECTION = 1024;
export const BINANCE_MAX_INCOMING_PER_SECOND = 5;
export const BINANCE_PING_INTERVAL_MS = 20_000;
export const BINANCE_PONG_TIMEOUT_MS = 60_000;
const METHODS = '`SUBSCRIBE`, `UNSUBSCRIBE`, `LIST_SUBSCRIPTIONS`, `SET_PROPERTY`, `GET_PROPERTY`';

interface BinanceConn {
  c: StreamConnection;
  /** Stream names in subscription order (a Set keeps insertion order). */
  streams: Set<string>;
  combined: boolean;
  /** Real-time instants (performance.now) of the incoming messages of the last second. */
  incoming: number[];
  lastPongAt: number;
}

type StreamKind = 'trade' | 'aggTrade' | 'depth' | 'depth100';
interface ParsedStream {
  pair: string;
  symbol: string;
  kind: StreamKind;
}

/**
 * Binance spot market streams: raw `/ws/<stream>`, combined `/stream?streams=a/b` (each event wrapped as
 * `{"stream","data"}`), and the live SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS / SET_PROPERTY /
 * GET_PROPERTY requests. Serves `<symbol>@trade`, `<symbol>@aggTrade` (the same tape, as `aggTrades` rows), `<symbol>@depth` (1000 ms) and `<symbol>@depth@100ms`
 * from the instrument models (binance-ws-market.ts); other well-formed names are accepted and stay silent.
 */
export class BinanceWsEmulation {
  private readonly conns = new Set<BinanceConn>();

  constructor(private readonly pairs: () => readonly string[]) {}

  /** Why an upgrade to `path` must be refused (HTTP 400), or undefined. `path` is after `/binance`. */
  refusal(path: string, query: URLSearchParams): string | undefined {
    const names = streamsOf(path, query);
    if (names === undefined) return `no stream endpoint at /binance${path}`;
    if (names.length > BINANCE_MAX_STREAMS_PER_CONNECTION) return `a connection can listen to at most ${BINANCE_MAX_STREAMS_PER_CONNECTION} streams`;
    return undefined;
  }

  accept(c: StreamConnection, path: string, query: URLSearchParams): number {
    const names = streamsOf(path, query) ?? [];
    const conn: BinanceConn = { c, streams: new Set(names), combined: path === '/stream', incoming: [], lastPongAt: performance.now() };
    this.conns.add(conn);
    c.ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(conn, data, isBinary));
    c.ws.on('ping', () => this.countIncoming(conn));
    c.ws.on('pong', () => {
      conn.lastPongAt = performance.now();
      this.countIncoming(conn);
    });
    c.ws.on('close', () => this.conns.delete(conn));
    return conn.streams.size;
  }

  /** Sends the events of the closed ticks `(fromTick, toTick]`. */
  onTicks(fromTick: number, toTick: number, seed: number): void {
    if (this.conns.size === 0) return;
    const symbols = new Map<string, string>();
    for (const p of this.pairs()) symbols.set(binanceInstrument(p).symbol.toLowerCase(), p);
    for (let k = fromTick + 1; k <= toTick; k++) {
      const payloads = new Map<string, string[]>();
      const eventsOf = (name: string): string[] => {
        let out = payloads.get(name);
        if (out) return out;
        out = [];
        const s = parseStream(name, symbols);
        if (s) {
          const model = binanceModel(s.pair, seed);
          if (s.kind === 'trade') {
            for (const t of model.tradesInTick(k)) out.push(binanceTradeEvent(model, s.symbol, t, (k + 1) * STREAM_TICK_MS));
          } else if (s.kind === 'aggTrade') {
            for (const a of model.aggsInTick(k)) out.push(binanceAggTradeEvent(model, s.symbol, a, (k + 1) * STREAM_TICK_MS));
          } else if (s.kind === 'depth100') {
            out.push(binanceDepthEvent(model, s.symbol, k - 1, k));
          } else if ((k + 1) % 10 === 0) {
            out.push(binanceDepthEvent(model, s.symbol, k - 10, k));
          }
        }
        payloads.set(name, out);
        return out;
      };
      for (const conn of this.conns) {
        for (const name of conn.streams) {
          for (const payload of eventsOf(name)) {
            if (!conn.c.open) break;
            conn.c.deliver(conn.combined ? `{"stream":"${name}","data":${payload}}` : payload);
          }
        }
      }
    }
  }

  /** Pings every connection and drops those silent past the pong timeout (called every 20 s). */
  ping(): void {
    const now = performance.now();
    for (const conn of this.conns) {
      if (now - conn.lastPongAt > BINANCE_PONG_TIMEOUT_MS) conn.c.ws.terminate();
      else if (conn.c.open && !conn.c.silent()) conn.c.ws.ping();
    }
  }

  private countIncoming(conn: BinanceConn): boolean {
    const now = performance.now();
    conn.incoming.push(now);
    while ((conn.incoming[0] ?? now) <= now - 1000) conn.incoming.shift();
    if (conn.incoming.length <= BINANCE_MAX_INCOMING_PER_SECOND) return true;
    conn.c.stats().rateLimitCloses += 1;
    conn.c.ws.close(1008, 'Too many requests');
    return false;
  }

  private onMessage(conn: BinanceConn, data: RawData, isBinary: boolean): void {
    if (!this.countIncoming(conn) || isBinary) return;
    const text = rawText(data);
    let req: unknown;
    try {
      req = JSON.parse(text);
    } catch {
      conn.c.reply(`{"code":3,"msg":"Invalid JSON: expected value at line 1 column 1"}`);
      return;
    }
    if (typeof req !== 'object' || req === null || Array.isArray(req)) {
      conn.c.reply(`{"code":2,"msg":"Invalid request: expected a JSON object"}`);
      return;
    }
    const { method, params, id } = req as { method?: unknown; params?: unknown; id?: unknown };
    if (!validId(id)) {
      conn.c.reply(`{"code":2,"msg":"Invalid request: request ID must be an unsigned integer"}`);
      return;
    }
    const idText = JSON.stringify(id ?? null);
    const result = (value: string): void => conn.c.reply(`{"result":${value},"id":${idText}}`);
    const error = (code: number, msg: string): void => conn.c.reply(`{"code":${code},"msg":${JSON.stringify(msg)},"id":${idText}}`);
    if (method === undefined) return error(2, `Invalid request: missing field \`method\` at line 1 column ${text.length}`);
    switch (method) {
      case 'SUBSCRIBE':
      case 'UNSUBSCRIBE': {
        if (!Array.isArray(params) || !params.every((p) => typeof p === 'string')) return error(2, 'Invalid request: params must be an array of stream names');
        if (method === 'SUBSCRIBE') {
          const added = params.filter((p: string) => !conn.streams.has(p));
          if (conn.streams.size + new Set(added).size > BINANCE_MAX_STREAMS_PER_CONNECTION) {
            return error(2, `Invalid request: a connection can listen to at most ${BINANCE_MAX_STREAMS_PER_CONNECTION} streams`);
          }
          for (const p of added) conn.streams.add(p);
          conn.c.stats().subscriptions += new Set(added).size;
        } else {
          for (const p of params as string[]) conn.streams.delete(p);
        }
        return result('null');
      }
      case 'LIST_SUBSCRIPTIONS':
        return result(JSON.stringify([...conn.streams]));
      case 'SET_PROPERTY': {
        if (!Array.isArray(params) || typeof params[0] !== 'string') return error(2, 'Invalid request: property name must be a string');
        if (params[0] !== 'combined') return error(0, 'Unknown property');
        if (typeof params[1] !== 'boolean') return error(1, 'Invalid value type: expected Boolean');
        conn.combined = params[1];
        return result('null');
      }
      case 'GET_PROPERTY': {
        if (!Array.isArray(params) || typeof params[0] !== 'string') return error(2, 'Invalid request: property name must be a string');
        if (params[0] !== 'combined') return error(0, 'Unknown property');
        return result(String(conn.combined));
      }
      default:
        return error(2, `Invalid request: unknown variant ${JSON.stringify(String(method))}, expected one of ${METHODS} at line 1 column 28`);
    }
  }
}

/** The streams named by an upgrade path, or undefined when the path is no stream endpoint. */
function streamsOf(path: string, query: URLSearchParams): string[] | undefined {
  if (path === '/stream') {
    const s = query.get('streams');
    return s ? s.split('/').filter((n) => n.length > 0) : [];
  }
  if (path === '/ws' || path === '/ws/') return [];
  if (path.startsWith('/ws/'))
    return path
      .slice(4)
      .split('/')
      .filter((n) => n.length > 0);
  return undefined;
}

function parseStream(name: string, symbols: ReadonlyMap<string, string>): ParsedStream | undefined {
  const at = name.indexOf('@');
  if (at < 0) return undefined;
  const lower = name.slice(0, at);
  const pair = symbols.get(lower);
  if (!pair) return undefined;
  const rest = name.slice(at + 1);
  const kind: StreamKind | undefined =
    rest === 'trade' ? 'trade' : rest === 'aggTrade' ? 'aggTrade' : rest === 'depth' ? 'depth' : rest === 'depth@100ms' ? 'depth100' : undefined;
  return kind ? { pair, symbol: lower.toUpperCase(), kind } : undefined;
}

/** 64-bit signed integer, an alphanumeric string of at most 36 characters, null, or absent. */
function validId(id: unknown): boolean {
  if (id === undefined || id === null) return true;
  if (typeof id === 'number') return Number.isInteger(id);
  return typeof id === 'string' && /^[A-Za-z0-9-]{0,36}$/.test(id);
}
