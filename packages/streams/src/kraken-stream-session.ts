import type { WebSocket } from 'ws';
import { z } from 'zod';
import {
  bookEnvelope,
  KRAKEN_STREAM_BOOK_DEPTHS,
  MalformedPayloadError,
  TickfleetError,
  tradeEnvelope,
  ValidationError,
  type Envelope,
  type Trade,
} from '@tickfleet/core';
import { DECIMAL_RE, normaliseBaseUrl, parsePayload, VenueHttpClient } from '@tickfleet/venues';
import { krakenBookChecksum } from './internal/kraken-checksum.js';
import { LevelBook } from './internal/level-book.js';
import { normaliseWsUrl, WsStreamSession } from './internal/ws-stream-session.js';
import { STREAM_DEFAULTS } from './stream-defaults.js';
import type { StreamSessionOptions } from './stream-session.js';

/** Kraken's public REST root, where trade holes are healed from (`GET /0/public/Trades`). */
export const KRAKEN_REST_URL = 'https://api.kraken.com';
/** Every public REST call adds 1 to Kraken's call counter (docs.kraken.com, "Spot REST Rate Limits"). */
export const KRAKEN_TRADES_WEIGHT = 1;
/** REST attempts per healing page before giving up on it. */
const REST_ATTEMPTS = 3;
/** Pages one hole may take at most (Trades answers up to 1000 trades a page). */
const MAX_HEAL_PAGES = 20;
/** Wait after a rate-limit answer that named no time: Kraken's counter drains one call in about 3 s. */
const KRAKEN_RATE_LIMIT_FALLBACK_MS = 10_000;

const Decimal = z.string().regex(DECIMAL_RE);
/** `[price, volume, time, side, type, misc, trade_id]` (docs.kraken.com, "Get Recent Trades"). */
const TradeRow = z.tuple([Decimal, Decimal, z.number(), z.enum(['b', 's']), z.string(), z.string(), z.number().int()]).rest(z.unknown());
const TradeRows = z.array(TradeRow);
const TradesAnswer = z.looseObject({ error: z.array(z.string()), result: z.record(z.string(), z.unknown()).optional() });

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
  /** REST root trade holes are healed from (the emulation: `mv.baseUrl('kraken')`). @defaultValue {@link KRAKEN_REST_URL} */
  restBaseUrl?: string;
}

/**
 * Kraken spot WebSocket v2: `trade` and `book` subscribed for the session's symbols on one connection.
 * Every book message (snapshot and update) is checked against its CRC32 checksum; a mismatch
 * unsubscribes and resubscribes that symbol's book (a fresh snapshot) and is recorded as a resync.
 * Trade ids are contiguous per symbol: a hole is healed from REST `GET /0/public/Trades` from the time
 * of the trade before it (see `heal`), each call budgeted at Kraken's weight through `beforeRestRequest`.
 */
export class KrakenStreamSession extends WsStreamSession {
  readonly venue = 'kraken';
  private readonly endpoint: string;
  private readonly depth: number;
  private readonly books = new Map<string, BookState>();
  private socket: WebSocket | undefined;
  private reqId = 0;
  private readonly restBaseUrl: string;
  private readonly http: VenueHttpClient;
  /** Time of the last stored trade per symbol: where a hole starts in time. */
  private readonly lastTradeTimes = new Map<string, number>();

  constructor(options: KrakenStreamSessionOptions) {
    super(options, {});
    this.endpoint = normaliseWsUrl('url', options.url);
    this.restBaseUrl = normaliseBaseUrl('restBaseUrl', options.restBaseUrl ?? KRAKEN_REST_URL);
    const beforeRest = options.beforeRestRequest;
    this.http = new VenueHttpClient({
      venue: this.venue,
      ...(beforeRest ? { hooks: { beforeRequest: (info) => beforeRest({ venue: info.venue, endpoint: info.endpoint, weight: info.weight }) } } : {}),
      clock: this.clock,
      ...(options.restTimeoutMs === undefined ? {} : { timeoutMs: options.restTimeoutMs }),
      errorPolicy: { rateLimitFallbackMs: KRAKEN_RATE_LIMIT_FALLBACK_MS },
    });
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

  protected async onText(text: string, receivedAtMs: number): Promise<void | 'garbled'> {
    let msg: { channel?: unknown; type?: unknown; data?: unknown; method?: unknown; success?: unknown; error?: unknown; symbol?: unknown };
    try {
      msg = JSON.parse(keepDecimalText(text)) as typeof msg;
    } catch {
      return 'garbled';
    }
    if (typeof msg !== 'object' || msg === null) return 'garbled';
    if (msg.success === false) {
      this.event({ type: 'venue-error', message: `kraken ${String(msg.method)} ${String(msg.symbol ?? '')}: ${String(msg.error)}` });
    } else if (msg.channel === 'book' && Array.isArray(msg.data)) {
      for (const d of msg.data as KrakenBookData[]) this.onBook(d, msg.type === 'snapshot', receivedAtMs);
    } else if (msg.channel === 'trade' && Array.isArray(msg.data)) {
      if (msg.type !== 'snapshot') this.counters.messages += 1;
      for (const d of msg.data as KrakenTradeData[]) await this.onTrade(d, msg.type === 'snapshot', receivedAtMs);
    }
    // status, heartbeat, acks, pong: liveness only (the base class saw the frame)
  }

  private async onTrade(d: KrakenTradeData, snapshot: boolean, receivedAtMs: number): Promise<void> {
    if (!this.books.has(d.symbol) || !Number.isSafeInteger(d.trade_id)) return;
    const timeMs = Date.parse(d.timestamp);
    if (!snapshot) this.observeTime(`${d.symbol}|trade`, timeMs, receivedAtMs);
    const last = this.lastTradeIds.get(d.symbol);
    if (last !== undefined && d.trade_id <= last) return;
    if (last !== undefined && d.trade_id > last + 1) await this.heal(d.symbol, last + 1, d.trade_id - 1, this.lastTradeTimes.get(d.symbol));
    this.push(this.tradeEnvelope(d.symbol, d.trade_id, d.price, d.qty, timeMs, d.side, receivedAtMs));
    this.lastTradeIds.set(d.symbol, d.trade_id);
    this.lastTradeTimes.set(d.symbol, timeMs);
  }

  /** The envelope a trade gets whether streamed or healed from REST: same message id, same payload. */
  private tradeEnvelope(symbol: string, id: number, price: string, qty: string, timeMs: number, side: 'buy' | 'sell', receivedAtMs: number): Envelope {
    const trade: Trade = { venue: this.venue, symbol, tradeId: String(id), timeMs, price, size: qty, side };
    return tradeEnvelope(trade, `kraken:${symbol}:trade:${id}`, receivedAtMs);
  }

  /**
   * Fills the hole of trade ids `from..to` from `GET /0/public/Trades?pair&since`: Kraken pages trades by
   * time only (`since` in nanoseconds, each answer's `last` the cursor of the next page), so the walk
   * starts at the time of the trade before the hole and keeps the rows whose `trade_id` lies in it, page
   * by page until the hole's last id is passed. Rows come in the same strings as the stream's (price at
   * the pair's decimals, 8-decimal volume), so a healed trade is the trade the stream would have sent.
   * What REST does not give (refused after retries, or never served) is reported unhealed by range;
   * without the time of the trade before the hole (a resumed stream) there is no start to page from.
   */
  private async heal(symbol: string, from: number, to: number, afterMs: number | undefined): Promise<void> {
    this.counters.gapsFound += 1;
    this.event({ type: 'gap', symbol, channel: 'trades', fromId: from, toId: to });
    await this.flush();
    const got = new Map<number, Envelope>();
    let failure: string | undefined;
    let calls = 0;
    if (afterMs === undefined) failure = 'no time for the trade before the hole (a resumed stream)';
    // one nanosecond before the last stored trade's millisecond: trades sharing it are not skipped
    let since = afterMs === undefined ? '' : `${afterMs * 1_000_000 - 1}`;
    while (failure === undefined && calls < MAX_HEAL_PAGES) {
      const params = new URLSearchParams({ pair: krakenRestPair(symbol), since });
      calls += 1;
      let page: { rows: z.infer<typeof TradeRow>[]; last: string | undefined; receivedAtMs: number };
      try {
        page = await this.rest(async () => {
          const res = await this.http.get({
            endpoint: 'Trades',
            weight: KRAKEN_TRADES_WEIGHT,
            url: `${this.restBaseUrl}/0/public/Trades?${params.toString()}`,
          });
          const answer = parsePayload(this.venue, 'Trades', res.body, TradesAnswer);
          if (answer.error.length > 0) throw new Error(answer.error.join(', '));
          const entry = Object.entries(answer.result ?? {}).find(([k]) => k !== 'last');
          const parsed = TradeRows.safeParse(entry?.[1] ?? []);
          if (!parsed.success) throw new MalformedPayloadError(this.venue, `Trades rows: ${parsed.error.issues[0]?.message ?? 'wrong shape'}`, entry?.[1]);
          const rows = parsed.data;
          const last = answer.result?.['last'];
          return { rows, last: typeof last === 'string' || typeof last === 'number' ? String(last) : undefined, receivedAtMs: res.receivedAtMs };
        });
      } catch (err) {
        failure = `Trades failed: ${err instanceof Error ? err.message : String(err)}`;
        break;
      }
      let top = -1;
      for (const [price, volume, time, side, , , id] of page.rows) {
        top = Math.max(top, id);
        if (id >= from && id <= to)
          got.set(id, this.tradeEnvelope(symbol, id, price, volume, Math.round(time * 1000), side === 's' ? 'sell' : 'buy', page.receivedAtMs));
      }
      if (top >= to || got.size === to - from + 1) break;
      // a page must move the cursor on: a venue repeating itself ends the walk instead of looping
      if (page.rows.length === 0 || page.last === undefined || page.last === since) {
        failure = 'not served by REST';
        break;
      }
      since = page.last;
    }
    const lost: Array<{ fromId: number; toId: number }> = [];
    for (let id = from; id <= to; id++) {
      const env = got.get(id);
      if (env) {
        this.push(env);
        continue;
      }
      const prev = lost.at(-1);
      if (prev && prev.toId === id - 1) prev.toId = id;
      else lost.push({ fromId: id, toId: id });
    }
    await this.flush();
    if (lost.length === 0) {
      this.counters.gapsHealed += 1;
      this.event({ type: 'healed', symbol, channel: 'trades', fromId: from, toId: to, restCalls: calls });
      return;
    }
    this.counters.gapsUnhealed += 1;
    const reason = failure ?? 'not served by REST';
    for (const r of lost) this.event({ type: 'unhealed', symbol, channel: 'trades', ...r, reason });
  }

  /** One REST call, retried on retryable failures (timeouts, 5xx, malformed answers). */
  private async rest<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const retryable = err instanceof TickfleetError && err.retryable;
        if (!retryable || attempt >= REST_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, this.backoffDelay(attempt - 1)));
      }
    }
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

/** A v2 pair as Kraken's REST names it (`altname`): `BTC/USD` -> `XBTUSD`, `DOGE/USD` -> `XDGUSD`. */
export function krakenRestPair(symbol: string): string {
  const rest = (asset: string): string => (asset === 'BTC' ? 'XBT' : asset === 'DOGE' ? 'XDG' : asset);
  const [base = '', quote = ''] = symbol.split('/');
  return `${rest(base)}${rest(quote)}`;
}

/**
 * Kraken writes prices and quantities as JSON numbers in full precision (`45283.50`, `0.10000000`);
 * JSON.parse would turn them into doubles and lose the trailing zeros the checksum needs. The docs tell
 * clients to parse them as decimals: here the `price` and `qty` numbers become strings before parsing.
 */
export function keepDecimalText(text: string): string {
  return text.replace(/"(price|qty)":(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g, '"$1":"$2"');
}
