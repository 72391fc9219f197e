import type { RawData } from 'ws';
import { unitFloat } from '../data/random.js';
import { krakenChecksum, type KrakenLevelText } from './kraken-checksum.js';
import { rawText, type StreamConnection } from './stream-connection.js';
import { STREAM_TICK_MS, streamModel, type ModelTrade, type StreamBookModel, type TickLevel } from './stream-book-model.js';

/** Pairs the Kraken emulation serves (WebSocket v2 names). */
export const DEFAULT_KRAKEN_SYMBOLS: readonly string[] = [
  'BTC/USD',
  'ETH/USD',
  'SOL/USD',
  'XRP/USD',
  'ADA/USD',
  'DOGE/USD',
  'DOT/USD',
  'LTC/USD',
  'LINK/USD',
  'BTC/EUR',
  'ETH/EUR',
  'ETH/BTC',
];
/** Kraken quotes quantities with 8 decimals (the pair's `qty_precision`). */
export const KRAKEN_QTY_DECIMALS = 8;
/** Depths the v2 `book` channel accepts. */
export const KRAKEN_BOOK_DEPTHS: readonly number[] = [10, 25, 100, 500, 1000];
const TRADE_SNAPSHOT_SIZE = 50;
/** Levels beyond the subscribed depth consulted to tell a level pushed out of scope from one removed. */
const SCOPE_MARGIN = 64;

/** The instrument model behind Kraken's `book` and `trade` channels for `symbol`. */
export function krakenModel(symbol: string, seed: number): StreamBookModel {
  return streamModel('kraken', symbol, seed, KRAKEN_QTY_DECIMALS);
}

/** Price decimals (`price_precision`) of a Kraken pair in the emulation: what a checksum needs to print prices. */
export function krakenPricePrecision(symbol: string, seed: number): number {
  return krakenModel(symbol, seed).priceDecimals;
}

interface KrakenConn {
  c: StreamConnection;
  /** symbol -> subscribed depth */
  books: Map<string, number>;
  trades: Set<string>;
}

/** The book a depth group last published: every subscriber of (symbol, depth) holds the same top levels. */
interface BookGroup {
  symbol: string;
  depth: number;
  model: StreamBookModel;
  view: { bids: TickLevel[]; asks: TickLevel[] };
}

/**
 * Kraken spot WebSocket v2 (`/kraken/v2`): the `status` greeting, `ping`/`pong`, `subscribe` and
 * `unsubscribe` of the `book` (depth 10/25/100/500/1000) and `trade` channels with per-symbol acks, a
 * snapshot and then updates, each book message carrying the CRC32 checksum of its top 10 levels, and a
 * `heartbeat` every second while subscribed. Prices and quantities are JSON numbers written in the pair's
 * full precision (`45283.5`, `0.10000000`), as Kraken sends them.
 */
export class KrakenWsEmulation {
  private readonly conns = new Set<KrakenConn>();
  private readonly groups = new Map<string, BookGroup>();
  private nextConnectionId = 1;

  constructor(
    private readonly seed: () => number,
    /** The last tick published before this emulation started: snapshots before the first publish show it. */
    private lastTick: number,
  ) {}

  accept(c: StreamConnection): void {
    const conn: KrakenConn = { c, books: new Map(), trades: new Set() };
    this.conns.add(conn);
    c.ws.on('message', (data: RawData, isBinary: boolean) => {
      if (!isBinary) this.onMessage(conn, rawText(data), nowIso(c.now()));
    });
    c.ws.on('close', () => this.conns.delete(conn));
    const connectionId = 0x4b000000 + this.nextConnectionId++;
    c.reply(`{"channel":"status","type":"update","data":[{"version":"2.0.10","system":"online","api_version":"v2","connection_id":${connectionId}}]}`);
  }

  /** Publishes the closed ticks `(fromTick, toTick]`: book updates and trades, a heartbeat each second. */
  onTicks(fromTick: number, toTick: number): void {
    for (let k = fromTick + 1; k <= toTick; k++) {
      this.lastTick = k;
      if (this.conns.size === 0) continue;
      const bookMessages = new Map<string, { text: string; corrupt: string }>();
      // groups nobody holds any more stop advancing; a held one missing (the seed changed) restarts from the previous tick
      const wanted = new Map<string, [string, number]>();
      for (const conn of this.conns) for (const [symbol, depth] of conn.books) wanted.set(this.groupKey(symbol, depth), [symbol, depth]);
      for (const key of [...this.groups.keys()]) if (!wanted.has(key)) this.groups.delete(key);
      for (const [key, [symbol, depth]] of wanted) if (!this.groups.has(key)) this.groups.set(key, this.newGroup(symbol, depth, k - 1));
      for (const [key, g] of this.groups) {
        const update = this.advance(g, k);
        if (update) bookMessages.set(key, update);
      }
      const tradeMessages = new Map<string, string>();
      for (const conn of this.conns) {
        for (const [symbol, depth] of conn.books) {
          const m = bookMessages.get(this.groupKey(symbol, depth));
          if (!m || !conn.c.open) continue;
          const rate = conn.c.settings().checksumCorruptionRate ?? 0;
          const corrupt = rate > 0 && unitFloat('kr-corrupt', conn.c.serial, symbol, k, this.seed()) < rate;
          if (conn.c.deliver(corrupt ? m.corrupt : m.text) === 'sent' && corrupt) conn.c.stats().checksumCorruptions += 1;
        }
        for (const symbol of conn.trades) {
          let text = tradeMessages.get(symbol);
          if (text === undefined) {
            const trades = krakenModel(symbol, this.seed()).tradesInTick(k);
            text =
              trades.length === 0
                ? ''
                : `{"channel":"trade","type":"update","data":[${trades.map((t) => tradeJson(krakenModel(symbol, this.seed()), symbol, t)).join(',')}]}`;
            tradeMessages.set(symbol, text);
          }
          if (text !== '' && conn.c.open) conn.c.deliver(text);
        }
        if ((k + 1) % 10 === 0 && (conn.books.size > 0 || conn.trades.size > 0)) conn.c.keepAlive('{"channel":"heartbeat"}');
      }
    }
  }

  /** Moves a group to tick `k`; the update message (and its corrupted twin) when its top levels changed. */
  private advance(g: BookGroup, k: number): { text: string; corrupt: string } | undefined {
    const next = g.model.levels(k, g.depth + SCOPE_MARGIN);
    const view = { bids: next.bids.slice(0, g.depth), asks: next.asks.slice(0, g.depth) };
    const bids = scopeChanges(g.view.bids, view.bids, next.bids);
    const asks = scopeChanges(g.view.asks, view.asks, next.asks);
    g.view = view;
    if (bids.length === 0 && asks.length === 0) return undefined;
    const checksum = this.checksum(g.model, view);
    const body = (sum: number): string =>
      `{"channel":"book","type":"update","data":[{"symbol":"${g.symbol}","bids":${levelsJson(g.model, bids)},"asks":${levelsJson(g.model, asks)},` +
      `"checksum":${sum},"timestamp":"${nowIso((k + 1) * STREAM_TICK_MS)}"}]}`;
    return { text: body(checksum), corrupt: body((checksum ^ 0x5a5a5a5a) >>> 0) };
  }

  private newGroup(symbol: string, depth: number, tick: number): BookGroup {
    const model = krakenModel(symbol, this.seed());
    return { symbol, depth, model, view: model.levels(tick, depth) };
  }

  /** Groups are per seed too: a PATCHed seed starts new tapes (subscribers see the jump as a checksum mismatch). */
  private groupKey(symbol: string, depth: number): string {
    return `${symbol}|${depth}|${this.seed()}`;
  }

  private checksum(model: StreamBookModel, view: { bids: TickLevel[]; asks: TickLevel[] }): number {
    const text = (levels: TickLevel[]): KrakenLevelText[] => levels.slice(0, 10).map(([p, q]) => [model.formatPrice(p), model.formatQty(q)]);
    return krakenChecksum(text(view.asks), text(view.bids));
  }

  private onMessage(conn: KrakenConn, text: string, timeIn: string): void {
    let req: { method?: unknown; params?: unknown; req_id?: unknown };
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      req = parsed as typeof req;
    } catch {
      conn.c.reply(`{"error":"Malformed request","success":false,"time_in":"${timeIn}","time_out":"${nowIso(conn.c.now())}"}`);
      return;
    }
    const reqId = typeof req.req_id === 'number' && Number.isInteger(req.req_id) ? `,"req_id":${req.req_id}` : '';
    const method = typeof req.method === 'string' ? req.method : '';
    const times = (): string => `"time_in":"${timeIn}","time_out":"${nowIso(conn.c.now())}"`;
    const fail = (error: string, symbol?: string): void =>
      conn.c.reply(
        `{"error":${JSON.stringify(error)},"method":${JSON.stringify(method)}${reqId},"success":false${symbol ? `,"symbol":${JSON.stringify(symbol)}` : ''},${times()}}`,
      );
    if (method === 'ping') {
      conn.c.reply(`{"method":"pong"${reqId},${times()}}`);
      return;
    }
    if (method !== 'subscribe' && method !== 'unsubscribe') {
      fail(`Method ${JSON.stringify(method)} is not supported`);
      return;
    }
    const params = (typeof req.params === 'object' && req.params !== null ? req.params : {}) as {
      channel?: unknown;
      symbol?: unknown;
      depth?: unknown;
      snapshot?: unknown;
    };
    const channel = params.channel;
    if (channel !== 'book' && channel !== 'trade') {
      fail(`Channel ${JSON.stringify(channel ?? null)} is not supported`);
      return;
    }
    if (!Array.isArray(params.symbol) || params.symbol.length === 0 || !params.symbol.every((s) => typeof s === 'string')) {
      fail('symbol must be a non-empty array of pair names');
      return;
    }
    const depth = params.depth === undefined ? 10 : params.depth;
    if (channel === 'book' && (typeof depth !== 'number' || !KRAKEN_BOOK_DEPTHS.includes(depth))) {
      fail(`Invalid depth: expected one of ${KRAKEN_BOOK_DEPTHS.join(', ')}`);
      return;
    }
    const snapshot = params.snapshot !== false;
    for (const symbol of params.symbol as string[]) {
      if (!DEFAULT_KRAKEN_SYMBOLS.includes(symbol)) {
        fail('Currency pair not supported', symbol);
        continue;
      }
      const result =
        channel === 'book'
          ? `{"channel":"book","depth":${depth as number},"snapshot":${snapshot},"symbol":"${symbol}"}`
          : `{"channel":"trade","snapshot":${snapshot},"symbol":"${symbol}"}`;
      const ack = (): void => conn.c.reply(`{"method":"${method}","result":${result},"success":true${reqId},${times()}}`);
      const subscribed = channel === 'book' ? conn.books.has(symbol) : conn.trades.has(symbol);
      if (method === 'unsubscribe') {
        if (!subscribed) {
          fail('Subscription Not Found', symbol);
          continue;
        }
        if (channel === 'book') conn.books.delete(symbol);
        else conn.trades.delete(symbol);
        ack();
        continue;
      }
      if (subscribed) {
        fail('Already subscribed', symbol);
        continue;
      }
      conn.c.stats().subscriptions += 1;
      ack();
      if (channel === 'book') {
        conn.books.set(symbol, depth as number);
        if (snapshot) conn.c.reply(this.bookSnapshot(symbol, depth as number));
      } else {
        conn.trades.add(symbol);
        if (snapshot) conn.c.reply(this.tradeSnapshot(symbol));
      }
    }
  }

  /** The group's current view (created at the last published tick), as a snapshot message. */
  private bookSnapshot(symbol: string, depth: number): string {
    const key = this.groupKey(symbol, depth);
    let g = this.groups.get(key);
    if (!g) {
      g = this.newGroup(symbol, depth, this.lastTick);
      this.groups.set(key, g);
    }
    return (
      `{"channel":"book","type":"snapshot","data":[{"symbol":"${symbol}","bids":${levelsJson(g.model, g.view.bids)},"asks":${levelsJson(g.model, g.view.asks)},` +
      `"checksum":${this.checksum(g.model, g.view)},"timestamp":"${nowIso((this.lastTick + 1) * STREAM_TICK_MS)}"}]}`
    );
  }

  private tradeSnapshot(symbol: string): string {
    const model = krakenModel(symbol, this.seed());
    const last = model.lastTradeId(this.lastTick);
    const trades = model.tradesBetween(last - TRADE_SNAPSHOT_SIZE + 1, last);
    return `{"channel":"trade","type":"snapshot","data":[${trades.map((t) => tradeJson(model, symbol, t)).join(',')}]}`;
  }
}

/**
 * What a subscriber holding `before` (the top `depth` levels) needs to hold `after`: new and changed
 * levels, and `qty 0` for levels that left the book. Levels merely pushed out of scope (still in `deeper`)
 * get nothing: the client truncates to its depth, as Kraken's book guide tells it to.
 */
function scopeChanges(before: TickLevel[], after: TickLevel[], deeper: TickLevel[]): TickLevel[] {
  const was = new Map(before);
  const out: TickLevel[] = [];
  for (const [p, q] of after) if (was.get(p) !== q) out.push([p, q]);
  const inAfter = new Set(after.map(([p]) => p));
  const inBook = new Set(deeper.map(([p]) => p));
  for (const [p] of before) if (!inAfter.has(p) && !inBook.has(p)) out.push([p, 0]);
  return out;
}

function levelsJson(model: StreamBookModel, levels: TickLevel[]): string {
  return `[${levels.map(([p, q]) => `{"price":${model.formatPrice(p)},"qty":${model.formatQty(q)}}`).join(',')}]`;
}

function tradeJson(model: StreamBookModel, symbol: string, t: ModelTrade): string {
  // Kraken's side is the taker's: a buyer-maker trade was a sell
  return (
    `{"symbol":"${symbol}","side":"${t.buyerMaker ? 'sell' : 'buy'}","price":${model.formatPrice(t.priceTicks)},"qty":${model.formatQty(t.qtyUnits)},` +
    `"ord_type":"${t.id % 3 === 0 ? 'limit' : 'market'}","trade_id":${t.id},"timestamp":"${nowIso(t.timeMs)}"}`
  );
}

/** RFC 3339 with microseconds, as Kraken v2 prints times (`2023-09-25T07:48:36.925533Z`). */
function nowIso(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000Z`;
}
