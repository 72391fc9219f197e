import type { WebSocket } from 'ws';
import { bookEnvelope, KRAKEN_STREAM_BOOK_DEPTHS, tradeEnvelope, ValidationError, type Trade } from '@tickfleet/core';
import { krakenBookChecksum } from './internal/kraken-checksum.js';
import { LevelBook } from './internal/level-book.js';
import { normaliseWsUrl, WsStreamSession } from './internal/ws-stream-session.js';
import { STREAM_DEFAULTS } from './stream-defaults.js';
import type { StreamSessionOptions } from './stream-session.js';

/** Depths the v2 `book` channel accepts (docs.kraken.com, WebSocket v2 `book`). */

interface KrakenLevel {
  price: string;
  qty: string;
}
interface KrakenBookData {
  symbol: string;
  bids: KrakenLevel[];
  asks: KrakenLevel[];
  checksum: number;
  timestamp: string;
}
interface KrakenTradeData {
  symbol: string;
  side: 'buy' | 'sell';
  price: string;
  qty: string;
  trade_id: number;
  timestamp: string;
}

interface BookState {
  synced: boolean;
  everSynced: boolean;
  /** Why the book left sync: reported with the resync when the new snapshot arrives. */
  resyncReason: string;
  book: LevelBook;
  lastBookEmitMs: number | null;
}

export interface KrakenStreamSessionOptions extends StreamSessionOptions {
  /** `wss://ws.kraken.com/v2` (the emulation: `ws://127.0.0.1:<port>/kraken/v2`). */
  url: string;
  /** Subscribed book depth, one of KRAKEN_STREAM_BOOK_DEPTHS. @defaultValue {@link STREAM_DEFAULTS.krakenBookDepth} */
  depth?: number;
}

/**
 * Kraken spot WebSocket v2: `trade` and `book` subscribed for the session's symbols on one connection.
 * Every book message (snapshot and update) is checked against its CRC32 checksum; a mismatch
 * unsubscribes and resubscribes that symbol's book (a fresh snapshot) and is recorded as a resync.
 * Trade ids are contiguous per symbol: a hole is reported unhealed (tickfleet has no Kraken REST
 * healing), except what the trade snapshot of a new subscription covers.
 */
export class KrakenStreamSession extends WsStreamSession {
  readonly venue = 'kraken';
  private readonly endpoint: string;
  private readonly depth: number;
  private readonly books = new Map<string, BookState>();
  private socket: WebSocket | undefined;
  private reqId = 0;

  constructor(options: KrakenStreamSessionOptions) {
    super(options, {});
    this.endpoint = normaliseWsUrl('url', options.url);
    const depth = options.depth ?? STREAM_DEFAULTS.krakenBookDepth;
    if (!(KRAKEN_STREAM_BOOK_DEPTHS as readonly number[]).includes(depth))
      throw new ValidationError('depth', `one of ${KRAKEN_STREAM_BOOK_DEPTHS.join(', ')}`, depth);
    this.depth = depth;
    for (const symbol of options.symbols) {
      if (!/^[A-Z0-9]+\/[A-Z0-9]+$/.test(symbol)) throw new ValidationError('symbols', 'Kraken v2 pairs such as BTC/USD', symbol);
      this.books.set(symbol, { synced: false, everSynced: false, resyncReason: 'reconnected', book: new LevelBook(), lastBookEmitMs: null });
    }
  }

  protected url(): string {
    return this.endpoint;
  }

  protected onOpen(ws: WebSocket): void {
    this.socket = ws;
    const symbols = [...this.books.keys()];
    if (this.opts.channels.includes('trades')) this.send({ method: 'subscribe', params: { channel: 'trade', symbol: symbols, snapshot: true } });
    if (this.opts.channels.includes('book'))
      this.send({ method: 'subscribe', params: { channel: 'book', symbol: symbols, depth: this.depth, snapshot: true } });
  }

  protected onClose(): void {
    this.socket = undefined;
    for (const b of this.books.values()) {
      if (b.synced) b.resyncReason = 'reconnected';
      b.synced = false;
    }
  }

  protected booksInSync(): boolean {
    if (!this.opts.channels.includes('book')) return true;
    for (const b of this.books.values()) if (!b.synced) return false;
    return true;
  }

  protected onText(text: string, receivedAtMs: number): Promise<void | 'garbled'> {
    let msg: { channel?: unknown; type?: unknown; data?: unknown; method?: unknown; success?: unknown; error?: unknown; symbol?: unknown };
    try {
      msg = JSON.parse(keepDecimalText(text)) as typeof msg;
    } catch {
      return Promise.resolve('garbled');
    }
    if (typeof msg !== 'object' || msg === null) return Promise.resolve('garbled');
    if (msg.success === false) {
      this.event({ type: 'venue-error', message: `kraken ${String(msg.method)} ${String(msg.symbol ?? '')}: ${String(msg.error)}` });
    } else if (msg.channel === 'book' && Array.isArray(msg.data)) {
      for (const d of msg.data as KrakenBookData[]) this.onBook(d, msg.type === 'snapshot', receivedAtMs);
    } else if (msg.channel === 'trade' && Array.isArray(msg.data)) {
      if (msg.type !== 'snapshot') this.counters.messages += 1;
      for (const d of msg.data as KrakenTradeData[]) this.onTrade(d, msg.type === 'snapshot', receivedAtMs);
    }
    // status, heartbeat, acks, pong: liveness only (the base class saw the frame)
    return Promise.resolve();
  }

  private onTrade(d: KrakenTradeData, snapshot: boolean, receivedAtMs: number): void {
    if (!this.books.has(d.symbol) || !Number.isSafeInteger(d.trade_id)) return;
    const timeMs = Date.parse(d.timestamp);
    if (!snapshot) this.observeTime(`${d.symbol}|trade`, timeMs, receivedAtMs);
    const last = this.lastTradeIds.get(d.symbol);
    if (last !== undefined && d.trade_id <= last) return;
    if (last !== undefined && d.trade_id > last + 1) {
      const range = { symbol: d.symbol, channel: 'trades' as const, fromId: last + 1, toId: d.trade_id - 1 };
      this.counters.gapsFound += 1;
      this.counters.gapsUnhealed += 1;
      this.event({ type: 'gap', ...range });
      this.event({ type: 'unhealed', ...range, reason: 'kraken trades are not healed from REST in tickfleet' });
    }
    const trade: Trade = { venue: this.venue, symbol: d.symbol, tradeId: String(d.trade_id), timeMs, price: d.price, size: d.qty, side: d.side };
    this.push(tradeEnvelope(trade, `kraken:${d.symbol}:trade:${d.trade_id}`, receivedAtMs));
    this.lastTradeIds.set(d.symbol, d.trade_id);
  }

  private onBook(d: KrakenBookData, snapshot: boolean, receivedAtMs: number): void {
    const st = this.books.get(d.symbol);
    if (!st) return;
    if (!snapshot) {
      this.counters.messages += 1;
      if (!st.synced) return; // updates between a mismatch and the new snapshot
    }
    const timeMs = Date.parse(d.timestamp);
    this.observeTime(`${d.symbol}|book`, timeMs, receivedAtMs);
    if (snapshot) st.book.clear();
    st.book.apply(
      'bids',
      d.bids.map((l) => [l.price, l.qty] as const),
    );
    st.book.apply(
      'asks',
      d.asks.map((l) => [l.price, l.qty] as const),
    );
    st.book.truncate(this.depth);
    const computed = krakenBookChecksum(st.book.top('asks', 10), st.book.top('bids', 10));
    if (computed !== d.checksum) {
      this.counters.checksumMismatches += 1;
      this.event({ type: 'checksum-mismatch', symbol: d.symbol, expected: d.checksum, computed });
      st.synced = false;
      st.everSynced = true;
      st.resyncReason = `checksum mismatch on ${snapshot ? 'a snapshot' : 'an update'}`;
      st.book.clear();
      // a fresh snapshot: unsubscribe and subscribe again (Kraken answers them in order)
      this.send({ method: 'unsubscribe', params: { channel: 'book', symbol: [d.symbol], depth: this.depth } });
      this.send({ method: 'subscribe', params: { channel: 'book', symbol: [d.symbol], depth: this.depth, snapshot: true } });
      return;
    }
    if (snapshot && st.everSynced) {
      this.counters.resyncs += 1;
      this.event({ type: 'resync', symbol: d.symbol, reason: st.resyncReason });
    }
    const now = this.clock.now();
    if (snapshot || st.lastBookEmitMs === null || now - st.lastBookEmitMs >= this.bookSnapshotMs) {
      st.lastBookEmitMs = now;
      const book = { venue: this.venue, symbol: d.symbol, timeMs, bids: st.book.top('bids', this.bookLevels), asks: st.book.top('asks', this.bookLevels) };
      this.push(bookEnvelope(book, `kraken:${d.symbol}:book:${timeMs}:${computed}`, receivedAtMs, timeMs, { checksum: computed, depth: this.depth }));
    }
    if (snapshot) {
      st.synced = true;
      st.everSynced = true;
    }
  }

  private send(request: { method: string; params: Record<string, unknown> }): void {
    this.reqId += 1;
    this.socket?.send(JSON.stringify({ ...request, req_id: this.reqId }));
  }
}

/**
 * Kraken writes prices and quantities as JSON numbers in full precision (`45283.50`, `0.10000000`);
 * JSON.parse would turn them into doubles and lose the trailing zeros the checksum needs. The docs tell
 * clients to parse them as decimals: here the `price` and `qty` numbers become strings before parsing.
 */
export function keepDecimalText(text: string): string {
  return text.replace(/"(price|qty)":(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g, '"$1":"$2"');
}
