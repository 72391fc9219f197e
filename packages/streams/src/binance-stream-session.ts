import { z } from 'zod';
import { BINANCE_BOOK_DEPTH, bookEnvelope, TickfleetError, tradeEnvelope, ValidationError, type Envelope, type Trade } from '@tickfleet/core';
import {
  BinanceDepth,
  binanceDepthWeight,
  binanceLimits,
  binanceVenueSymbol,
  DECIMAL_RE,
  normaliseBaseUrl,
  parsePayload,
  VenueHttpClient,
  type HttpResponse,
} from '@tickfleet/venues';
import { LevelBook } from './internal/level-book.js';
import { normaliseWsUrl, WsStreamSession } from './internal/ws-stream-session.js';
import { STREAM_DEFAULTS } from './stream-defaults.js';
import type { StreamSessionOptions } from './stream-session.js';

/** Documented spot stream limits (developers.binance.com, "WebSocket Streams for Binance", "WebSocket Limits"). */
export const BINANCE_MAX_STREAMS_PER_CONNECTION = 1024;
/**
 * "WebSocket connections have a limit of 300 connections per attempt every 5 minutes per IP"
 * (developers.binance.com/docs/binance-spot-api-docs/web-socket-streams).
 */
export const BINANCE_CONNECTION_ATTEMPTS = { limit: 300, windowMs: 300_000 } as const;
/** `GET /api/v3/aggTrades` weight (spot REST docs). */
export const BINANCE_AGG_TRADES_WEIGHT = 4;
/** `GET /api/v3/historicalTrades` weight (spot REST docs). */
export const BINANCE_HISTORICAL_TRADES_WEIGHT = 25;
/** Rows per page of both trade endpoints at most. */
const TRADES_MAX_LIMIT = 1000;
/** aggTrades refuses `startTime`/`endTime` 1 h or more apart (-1127); a window ends 1 ms short of it. */
const AGG_WINDOW_MS = 3_600_000 - 1;
/** REST attempts per snapshot or healing page before giving up on it. */
const REST_ATTEMPTS = 3;
/** Snapshots taken in a row for one sync when each turns out older than the buffered diffs. */
const SNAPSHOT_TRIES = 5;

const Decimal = z.string().regex(DECIMAL_RE);
const AggTrades = z.array(
  z.looseObject({ a: z.number().int(), p: Decimal, q: Decimal, f: z.number().int(), l: z.number().int(), T: z.number().int(), m: z.boolean() }),
);
const HistoricalTrades = z.array(z.looseObject({ id: z.number().int(), price: Decimal, qty: Decimal, time: z.number().int(), isBuyerMaker: z.boolean() }));

/** Trade ids `fromId..toId` REST could not give, and why. */
interface MissingRange {
  fromId: number;
  toId: number;
  reason: string;
}

interface TradeEvent {
  e: 'trade';
  E: number;
  s: string;
  t: number;
  p: string;
  q: string;
  T: number;
  m: boolean;
}
interface DepthEvent {
  e: 'depthUpdate';
  E: number;
  s: string;
  U: number;
  u: number;
  b: Array<[string, string]>;
  a: Array<[string, string]>;
}

interface SymbolState {
  symbol: string;
  venueSymbol: string;
  synced: boolean;
  /** Whether this book was ever in sync: a later sync is a resync. */
  everSynced: boolean;
  /** Why the book left sync (reported with the resync). */
  resyncReason: string;
  /** The next applied diff is the first after a snapshot (`U <= lastUpdateId + 1 <= u`). */
  first: boolean;
  lastUpdateId: number;
  book: LevelBook;
  lastBookEmitMs: number | null;
  /** performance.now() before which no snapshot is requested again after a failed one. */
  snapshotRetryAt: number;
  snapshotFailures: number;
}

export interface BinanceStreamSessionOptions extends StreamSessionOptions {
  /** Stream root: `wss://stream.binance.com:9443` (the emulation: `ws://127.0.0.1:<port>/binance`). */
  wsBaseUrl: string;
  /** REST root for depth snapshots and trade healing: `https://api.binance.com` (the emulation: `mv.baseUrl('binance')`). */
  restBaseUrl: string;
  /** Levels of the REST depth snapshot a book is built from (sets its weight). @defaultValue {@link STREAM_DEFAULTS.binanceBookDepth} */
  depthLimit?: number;
}

/**
 * Binance spot streams on one combined connection (`/stream?streams=<sym>@trade/<sym>@depth@100ms/…`):
 * trades with trade-id continuity per symbol (a hole is healed from `GET /api/v3/aggTrades` by id), and
 * a local order book per symbol kept by Binance's documented procedure (buffer diffs, REST depth
 * snapshot, drop `u <= lastUpdateId`, first diff `U <= lastUpdateId + 1 <= u`, then `U = previous u + 1`,
 * else resync from a new snapshot).
 */
export class BinanceStreamSession extends WsStreamSession {
  readonly venue = 'binance';
  private readonly wsBaseUrl: string;
  private readonly restBaseUrl: string;
  private readonly depthLimit: number;
  private readonly http: VenueHttpClient;
  private readonly states = new Map<string, SymbolState>();
  private readonly streams: string[];
  /** `T` of the last stored trade per symbol: where a hole starts in time. */
  private readonly lastTradeTimes = new Map<string, number>();

  constructor(options: BinanceStreamSessionOptions) {
    super(options, { attempts: BINANCE_CONNECTION_ATTEMPTS });
    this.wsBaseUrl = normaliseWsUrl('wsBaseUrl', options.wsBaseUrl);
    this.restBaseUrl = normaliseBaseUrl('restBaseUrl', options.restBaseUrl);
    const depthLimit = options.depthLimit ?? STREAM_DEFAULTS.binanceBookDepth;
    const { min, max } = BINANCE_BOOK_DEPTH;
    if (!Number.isSafeInteger(depthLimit) || depthLimit < min || depthLimit > max)
      throw new ValidationError('depthLimit', `an integer ${min}..${max}`, depthLimit);
    this.depthLimit = depthLimit;
    this.streams = [];
    for (const symbol of options.symbols) {
      const venueSymbol = binanceVenueSymbol(symbol);
      if (!/^[A-Z0-9]{2,20}$/.test(venueSymbol)) throw new ValidationError('symbols', 'Binance spot symbols such as BTC/USDT', symbol);
      this.states.set(venueSymbol, {
        symbol,
        venueSymbol,
        synced: false,
        everSynced: false,
        resyncReason: 'reconnected',
        first: false,
        lastUpdateId: 0,
        book: new LevelBook(),
        lastBookEmitMs: null,
        snapshotRetryAt: 0,
        snapshotFailures: 0,
      });
      const lower = venueSymbol.toLowerCase();
      if (options.channels.includes('trades')) this.streams.push(`${lower}@trade`);
      if (options.channels.includes('book')) this.streams.push(`${lower}@depth@100ms`);
    }
    if (this.streams.length > BINANCE_MAX_STREAMS_PER_CONNECTION) {
      throw new ValidationError('symbols', `at most ${BINANCE_MAX_STREAMS_PER_CONNECTION} streams per connection (symbols × channels)`, this.streams.length);
    }
    const beforeRest = options.beforeRestRequest;
    this.http = new VenueHttpClient({
      venue: this.venue,
      ...(beforeRest ? { hooks: { beforeRequest: (info) => beforeRest({ venue: info.venue, endpoint: info.endpoint, weight: info.weight }) } } : {}),
      clock: this.clock,
      ...(options.restTimeoutMs === undefined ? {} : { timeoutMs: options.restTimeoutMs }),
      ...binanceLimits(),
    });
  }

  protected url(): string {
    return `${this.wsBaseUrl}/stream?streams=${this.streams.join('/')}`;
  }

  protected onOpen(): void {
    // the streams are in the URL: nothing to send (and nothing counts against the 5 messages/s)
  }

  protected onClose(): void {
    for (const st of this.states.values()) this.leaveSync(st, 'reconnected');
  }

  protected booksInSync(): boolean {
    if (!this.opts.channels.includes('book')) return true;
    for (const st of this.states.values()) if (!st.synced) return false;
    return true;
  }

  protected async onText(text: string, receivedAtMs: number): Promise<void | 'garbled'> {
    let msg: { stream?: unknown; data?: unknown; result?: unknown; id?: unknown; code?: unknown; msg?: unknown };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      // a cut frame still names its stream: a lost depth diff leaves a hole in that book
      const m = /^\{"stream":"([a-z0-9]+)@depth/.exec(text);
      const st = m ? this.states.get((m[1] ?? '').toUpperCase()) : undefined;
      if (st) this.leaveSync(st, 'garbled depth frame');
      return 'garbled';
    }
    if (typeof msg !== 'object' || msg === null) return 'garbled';
    if (msg.code !== undefined) {
      this.event({ type: 'venue-error', message: `binance stream error ${String(msg.code)}: ${String(msg.msg)}` });
      return;
    }
    const data = msg.data as { e?: unknown; s?: unknown } | undefined;
    if (!data || typeof data !== 'object') return; // replies to requests ({"result":…,"id":…})
    const st = typeof data.s === 'string' ? this.states.get(data.s) : undefined;
    if (!st) return;
    if (data.e === 'trade') await this.onTrade(st, data as TradeEvent, receivedAtMs);
    else if (data.e === 'depthUpdate') await this.onDepth(st, data as DepthEvent, receivedAtMs);
  }

  private async onTrade(st: SymbolState, ev: TradeEvent, receivedAtMs: number): Promise<void> {
    if (!Number.isSafeInteger(ev.t) || typeof ev.p !== 'string' || typeof ev.q !== 'string')
      throw new Error(`binance trade event without t/p/q for ${st.venueSymbol}`);
    this.counters.messages += 1;
    this.observeTime(`${st.venueSymbol}@trade`, ev.E, receivedAtMs);
    const last = this.lastTradeIds.get(st.symbol);
    if (last !== undefined && ev.t <= last) return; // already stored (a replay after a reconnect)
    if (last !== undefined && ev.t > last + 1) await this.heal(st, last + 1, ev.t - 1, this.lastTradeTimes.get(st.symbol), ev.T);
    this.push(this.tradeEnvelope(st, ev.t, ev.p, ev.q, ev.T, ev.m, receivedAtMs));
    this.lastTradeIds.set(st.symbol, ev.t);
    this.lastTradeTimes.set(st.symbol, ev.T);
  }

  /** The envelope a trade gets whether streamed or healed from REST: same message id, same payload. */
  private tradeEnvelope(st: SymbolState, id: number, price: string, qty: string, timeMs: number, buyerMaker: boolean, receivedAtMs: number): Envelope {
    const trade: Trade = { venue: this.venue, symbol: st.symbol, tradeId: String(id), timeMs, price, size: qty, side: buyerMaker ? 'sell' : 'buy' };
    return tradeEnvelope(trade, `binance:${st.venueSymbol}:trade:${id}`, receivedAtMs);
  }

  /**
   * Fills the hole of trade ids `from..to`, exactly and at the least weight. On Binance `aggTrades` ids are
   * aggregate ids (not trade ids) and an aggregate merges the fills of one taker order at one price, so:
   * 1. the hole is found by time: `aggTrades?startTime=<T before>&endTime=<T after>` (less than 1 h apart;
   *    a longer hole continues by aggregate id, `fromId=<last a + 1>`, as does a full page); an aggregate
   *    with `f = l` inside the hole is one trade exactly (price, quantity, time, side);
   * 2. the ids still missing (fills of multi-trade aggregates, whose own quantities aggTrades sums away,
   *    or ids step 1 does not reach) come from `historicalTrades?fromId=<trade id>` (weight 25), by page;
   * 3. what neither gives (refused after retries, or not served) is reported unhealed by range.
   * The hole is worked through one aggregate page at a time and what is settled is delivered in id order
   * before the next page, so a long hole holds at most about two pages in memory. Without the time of the
   * trade before the hole (a resumed stream) step 1 has no start and is skipped.
   */
  private async heal(st: SymbolState, from: number, to: number, afterMs: number | undefined, beforeMs: number): Promise<void> {
    this.counters.gapsFound += 1;
    this.event({ type: 'gap', symbol: st.symbol, channel: 'trades', fromId: from, toId: to });
    await this.flush();
    const got = new Map<number, Envelope>();
    const failures: string[] = [];
    const lost: MissingRange[] = [];
    let calls = 0;
    const get = async (endpoint: 'aggTrades' | 'historicalTrades', weight: number, query: Record<string, number>): Promise<HttpResponse> => {
      const params = new URLSearchParams({ symbol: st.venueSymbol });
      for (const [k, v] of Object.entries(query)) params.set(k, String(v));
      calls += 1;
      return this.rest(() => this.http.get({ endpoint, weight, url: `${this.restBaseUrl}/api/v3/${endpoint}?${params.toString()}` }));
    };

    let aggQuery: Record<string, number> | undefined =
      afterMs === undefined ? undefined : { startTime: afterMs, endTime: Math.min(beforeMs, afterMs + AGG_WINDOW_MS) };
    /** Highest trade id the aggregates fetched so far account for. */
    let reached = from - 1;
    /** Ids up to here are delivered or given up. */
    let settled = from - 1;
    let historyFailed = false;
    while (settled < to) {
      if (aggQuery) {
        const limit = Math.min(TRADES_MAX_LIMIT, to - reached + 2);
        const page = await get('aggTrades', BINANCE_AGG_TRADES_WEIGHT, { ...aggQuery, limit })
          .then((res) => ({ rows: parsePayload(this.venue, 'aggTrades', res.body, AggTrades), receivedAtMs: res.receivedAtMs }))
          .catch((err: unknown) => {
            failures.push(`aggTrades failed: ${errorText(err)}`);
            return undefined;
          });
        let lastAgg: number | undefined;
        for (const row of page?.rows ?? []) {
          lastAgg = row.a;
          if (row.l < from) continue;
          if (row.f > to) break;
          if (row.f === row.l) got.set(row.f, this.tradeEnvelope(st, row.f, row.p, row.q, row.T, row.m, page?.receivedAtMs ?? 0));
          reached = Math.max(reached, row.l);
        }
        const rows = page?.rows ?? [];
        const truncated = aggQuery.endTime !== undefined && aggQuery.endTime < beforeMs;
        const more = lastAgg !== undefined && reached < to && (rows.length === limit || truncated) && (rows.at(-1)?.f ?? 0) <= to;
        // a page must move the aggregate cursor on: a venue repeating itself ends step 1 instead of looping
        aggQuery = more && lastAgg !== undefined && lastAgg + 1 > (aggQuery.fromId ?? -1) ? { fromId: lastAgg + 1 } : undefined;
      }
      // ids the aggregates settle no further (or all, once they are done) come from historicalTrades
      const upTo = aggQuery ? reached : to;
      let cursor = settled + 1;
      while (!historyFailed) {
        while (cursor <= upTo && got.has(cursor)) cursor++;
        if (cursor > upTo) break;
        try {
          const res = await get('historicalTrades', BINANCE_HISTORICAL_TRADES_WEIGHT, { fromId: cursor, limit: Math.min(TRADES_MAX_LIMIT, to - cursor + 1) });
          const rows = parsePayload(this.venue, 'historicalTrades', res.body, HistoricalTrades);
          let top = cursor - 1;
          for (const row of rows) {
            if (row.id >= from && row.id <= to && !got.has(row.id)) {
              got.set(row.id, this.tradeEnvelope(st, row.id, row.price, row.qty, row.time, row.isBuyerMaker, res.receivedAtMs));
            }
            top = Math.max(top, row.id);
          }
          if (top < cursor) {
            failures.push(`historicalTrades from id ${cursor} returns none of them`);
            historyFailed = true;
          }
          // ids of [cursor, top] the page did not hold are not served: given up below
          cursor = top + 1;
        } catch (err) {
          failures.push(`historicalTrades failed: ${errorText(err)}`);
          historyFailed = true;
        }
      }
      for (let id = settled + 1; id <= upTo; id++) {
        const env = got.get(id);
        if (env) {
          this.push(env);
          got.delete(id);
          continue;
        }
        const last = lost.at(-1);
        if (last && last.toId === id - 1) last.toId = id;
        else lost.push({ fromId: id, toId: id, reason: '' });
      }
      settled = upTo;
      await this.flush();
    }

    if (lost.length === 0) {
      this.counters.gapsHealed += 1;
      this.event({ type: 'healed', symbol: st.symbol, channel: 'trades', fromId: from, toId: to, restCalls: calls });
      return;
    }
    this.counters.gapsUnhealed += 1;
    const reason = failures.length > 0 ? failures.join('; ') : 'not served by REST';
    for (const r of lost) this.event({ type: 'unhealed', symbol: st.symbol, channel: 'trades', ...r, reason });
  }

  private async onDepth(st: SymbolState, ev: DepthEvent, receivedAtMs: number): Promise<void> {
    if (!Number.isSafeInteger(ev.U) || !Number.isSafeInteger(ev.u) || !Array.isArray(ev.b) || !Array.isArray(ev.a)) {
      throw new Error(`binance depth event without U/u/b/a for ${st.venueSymbol}`);
    }
    this.counters.messages += 1;
    this.observeTime(`${st.venueSymbol}@depth`, ev.E, receivedAtMs);
    if (!st.synced) {
      await this.sync(st, ev, receivedAtMs);
      return;
    }
    if (ev.u <= st.lastUpdateId) return;
    if (st.first ? ev.U > st.lastUpdateId + 1 : ev.U !== st.lastUpdateId + 1) {
      this.leaveSync(st, st.first ? `snapshot ${st.lastUpdateId} older than diff ${ev.U}..${ev.u}` : `update ids ${st.lastUpdateId + 1}..${ev.U - 1} missing`);
      await this.sync(st, ev, receivedAtMs);
      return;
    }
    this.applyDiff(st, ev);
    const now = this.clock.now();
    if (st.lastBookEmitMs === null || now - st.lastBookEmitMs >= this.bookSnapshotMs) this.emitBook(st, ev.E, receivedAtMs, ev.E);
  }

  private applyDiff(st: SymbolState, ev: DepthEvent): void {
    st.book.apply('bids', ev.b);
    st.book.apply('asks', ev.a);
    st.lastUpdateId = ev.u;
    st.first = false;
  }

  private leaveSync(st: SymbolState, reason: string): void {
    if (!st.synced) return;
    st.synced = false;
    st.resyncReason = reason;
  }

  /**
   * Builds the book from a REST snapshot; `ev` is the oldest diff not applied (later ones wait in the
   * session's queue, which is the procedure's buffer). A snapshot older than `ev` is taken again.
   */
  private async sync(st: SymbolState, ev: DepthEvent, receivedAtMs: number): Promise<void> {
    if (performance.now() < st.snapshotRetryAt) return;
    if (st.everSynced) {
      this.counters.resyncs += 1;
      this.event({ type: 'resync', symbol: st.symbol, reason: st.resyncReason });
    }
    await this.flush();
    for (let tries = 0; tries < SNAPSHOT_TRIES; tries++) {
      let depth: BinanceDepth;
      let sentAtMs: number;
      let gotAtMs: number;
      try {
        const url = `${this.restBaseUrl}/api/v3/depth?${new URLSearchParams({ symbol: st.venueSymbol, limit: String(this.depthLimit) }).toString()}`;
        const res = await this.rest(() => this.http.get({ endpoint: 'depth', weight: binanceDepthWeight(this.depthLimit), url }));
        depth = parsePayload(this.venue, 'depth', res.body, BinanceDepth);
        sentAtMs = res.sentAtMs;
        gotAtMs = res.receivedAtMs;
      } catch (err) {
        st.snapshotFailures += 1;
        st.snapshotRetryAt = performance.now() + this.backoffDelay(st.snapshotFailures);
        st.resyncReason = `depth snapshot failed: ${errorText(err)}`;
        st.everSynced = true;
        this.event({ type: 'venue-error', message: `binance ${st.venueSymbol} depth snapshot failed: ${errorText(err)}` });
        return;
      }
      // the snapshot must not be older than the first diff still to apply
      if (ev.U > depth.lastUpdateId + 1) continue;
      st.snapshotFailures = 0;
      st.book.clear();
      st.book.apply('bids', depth.bids);
      st.book.apply('asks', depth.asks);
      st.lastUpdateId = depth.lastUpdateId;
      st.first = true;
      st.synced = true;
      st.everSynced = true;
      if (ev.u > depth.lastUpdateId) this.applyDiff(st, ev);
      this.emitBook(st, sentAtMs, Math.max(gotAtMs, receivedAtMs), ev.u > depth.lastUpdateId ? ev.E : undefined);
      return;
    }
    st.resyncReason = `${SNAPSHOT_TRIES} depth snapshots older than the stream`;
    this.event({ type: 'venue-error', message: `binance ${st.venueSymbol}: ${st.resyncReason}` });
  }

  private emitBook(st: SymbolState, timeMs: number, receivedAtMs: number, serverTimeMs: number | undefined): void {
    st.lastBookEmitMs = this.clock.now();
    const book = {
      venue: this.venue,
      symbol: st.symbol,
      timeMs,
      sequence: st.lastUpdateId,
      bids: st.book.top('bids', this.bookLevels),
      asks: st.book.top('asks', this.bookLevels),
    };
    this.push(bookEnvelope(book, `binance:${st.venueSymbol}:book:${st.lastUpdateId}`, receivedAtMs, serverTimeMs, { lastUpdateId: st.lastUpdateId }));
  }

  /** A REST call retried on failures that may pass (5xx, timeouts, 429 after its wait is not ours to take: the budget's). */
  private async rest<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const retryable = !(err instanceof TickfleetError) || err.retryable;
        if (!retryable || attempt >= REST_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, this.backoffDelay(attempt - 1)));
      }
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
