import { canonicalSymbol, priceAt, priceDecimals } from '../data/candles.js';
import { unitFloat } from '../data/random.js';

/** The streamed book and trades move in ticks of this length; tick `k` covers `[k * 100, (k + 1) * 100)` ms. */
export const STREAM_TICK_MS = 100;
const DAY_MS = 86_400_000;

/** The last tick whose book and trades are published at `nowMs` (ticks close on their end instant). */
export function lastClosedTick(nowMs: number): number {
  return Math.floor(nowMs / STREAM_TICK_MS) - 1;
}
const TICKS_PER_DAY = DAY_MS / STREAM_TICK_MS;
/**
 * Price-grid levels on each side of a day's centre. Enough for Binance's largest REST depth (5000 asks
 * for what exists: about 1050 levels a side once empty levels are skipped) and Kraken's depth 1000.
 */
const HALF_LEVELS = 1200;
/** Share of non-top levels that are empty at any moment, so levels appear and vanish. */
const EMPTY_RATE = 0.12;
/**
 * Aggregates (Binance `aggTrades` rows: the fills of one taker order at one price and instant) per tick on
 * average, and the share of them that fill two trades: 0.64 · 1.25 = 0.8 trades per tick (8 a second per
 * instrument). Both counts are closed forms (`floor((n + u_n) · rate)`), so the aggregate id of any
 * instant and the trade ids of any aggregate are O(1) without replaying the tape.
 */
const AGGS_PER_TICK = 0.64;
const MULTI_RATE = 0.25;

interface DayGrid {
  day: number;
  /** The day's centre price in price ticks (`price * 10^priceDecimals`). */
  centerTicks: number;
  /** Base-asset quantity worth about 100k quote at the centre price, in qty units. */
  qtyScaleUnits: number;
  /** Per level: how many ticks its quantity holds, and the offset of its change points. */
  periods: Int32Array;
  phases: Int32Array;
}

/** A level as the model holds it: price in price ticks, quantity in qty units (0 removes the level). */
export type TickLevel = [priceTicks: number, qtyUnits: number];

/** The changes between two instants: levels whose quantity differs, bids best first, asks best first. */
export interface BookChanges {
  bids: TickLevel[];
  asks: TickLevel[];
}

/**
 * One aggregate of the tape: the fills of one taker order at one price and instant (Binance `a`, `f`..`l`).
 * Aggregate ids are their own contiguous sequence, smaller than trade ids (about 0.8 of them).
 */
export interface ModelAggregate {
  id: number;
  firstTradeId: number;
  lastTradeId: number;
  timeMs: number;
  priceTicks: number;
  /** The fills' quantities summed. */
  qtyUnits: number;
  buyerMaker: boolean;
}

/** One trade of the streamed tape. */
export interface ModelTrade {
  id: number;
  timeMs: number;
  priceTicks: number;
  qtyUnits: number;
  /** Binance `m`: the buyer was the maker, so the taker sold (at the best bid). */
  buyerMaker: boolean;
}

/**
 * The order book and trade tape one instrument streams: a pure function of (venue, symbol, seed, tick), so
 * the WebSocket diffs, the REST snapshot and the REST trade history agree and a test can recompute any
 * instant. The book lives on a fixed price grid around the day's centre price; the mid drifts a few dozen
 * levels (a 5-minute wave plus jitter); each level holds its quantity for its own period (0.8..20 s) and
 * then redraws it (sometimes to empty); the best bid and ask redraw every tick. A diff therefore touches
 * about a dozen levels per 100 ms, and is computed without replaying history: a level changed between two
 * ticks exactly when one of its change points, or the mid band, lies between them.
 */
export class StreamBookModel {
  readonly key: string;
  readonly priceDecimals: number;
  private readonly grids = new Map<number, DayGrid>();
  private readonly phase: number;

  constructor(
    readonly venue: string,
    symbol: string,
    readonly seed: number,
    readonly qtyDecimals: number,
  ) {
    this.key = canonicalSymbol(symbol);
    this.priceDecimals = priceDecimals(venue, this.key, seed);
    this.phase = 2 * Math.PI * unitFloat('sb-phase', venue, this.key, seed);
  }

  /** Mid offset from the day's centre, in levels, at `tick`. */
  midOffset(tick: number): number {
    const wave = Math.round(40 * Math.sin((2 * Math.PI * tick) / 3000 + this.phase));
    return wave + Math.floor(unitFloat('sb-mid', this.venue, this.key, this.seed, Math.floor(tick / 7)) * 3) - 1;
  }

  /** The book after `tick`: up to `depth` levels a side, best first. */
  levels(tick: number, depth: number): { bids: TickLevel[]; asks: TickLevel[] } {
    const g = this.grid(dayOf(tick));
    const m = this.midOffset(tick);
    const bids: TickLevel[] = [];
    const asks: TickLevel[] = [];
    for (let j = HALF_LEVELS + m - 1; j >= 0 && bids.length < depth; j--) {
      const e = this.entry(g, j, tick, m);
      if (e > 0) bids.push([g.centerTicks + j - HALF_LEVELS, e]);
    }
    for (let j = HALF_LEVELS + m + 1; j <= 2 * HALF_LEVELS && asks.length < depth; j++) {
      const e = this.entry(g, j, tick, m);
      if (e < 0) asks.push([g.centerTicks + j - HALF_LEVELS, -e]);
    }
    return { bids, asks };
  }

  /** Every level whose quantity differs between the book after `fromTick` and the book after `toTick` (`fromTick < toTick`). */
  changes(fromTick: number, toTick: number): BookChanges {
    const day = dayOf(toTick);
    if (dayOf(fromTick) !== day || toTick - fromTick > 600) return this.fullChanges(fromTick, toTick);
    const g = this.grid(day);
    const out: BookChanges = { bids: [], asks: [] };
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (let t = fromTick; t <= toTick; t++) {
      const m = this.midOffset(t);
      if (m < lo) lo = m;
      if (m > hi) hi = m;
    }
    const mFrom = this.midOffset(fromTick);
    const mTo = this.midOffset(toTick);
    for (let j = 0; j <= 2 * HALF_LEVELS; j++) {
      const rel = j - HALF_LEVELS;
      const period = g.periods[j] ?? 1;
      const ph = g.phases[j] ?? 0;
      const inBand = rel >= lo - 1 && rel <= hi + 1;
      if (!inBand && Math.floor((toTick + ph) / period) === Math.floor((fromTick + ph) / period)) continue;
      pushChange(out, g.centerTicks + rel, this.entry(g, j, fromTick, mFrom), this.entry(g, j, toTick, mTo));
    }
    out.bids.sort((a, b) => b[0] - a[0]);
    out.asks.sort((a, b) => a[0] - b[0]);
    return out;
  }

  /** Id of the last aggregate at or before the end of `tick` (ids are contiguous; a tick holds 0..2 aggregates). */
  lastAggId(tick: number): number {
    return Math.floor((tick + unitFloat('sb-aid', this.venue, this.key, this.seed, tick)) * AGGS_PER_TICK);
  }

  /** Trade ids of aggregate `id`: it follows `id - 1` without a hole and fills one or two trades. */
  aggTradeIds(id: number): { first: number; last: number } {
    return { first: id + this.multiUpTo(id - 1), last: id + this.multiUpTo(id) };
  }

  /** Id of the last trade at or before the end of `tick` (ids are contiguous; a tick holds 0..4 trades). */
  lastTradeId(tick: number): number {
    return this.aggTradeIds(this.lastAggId(tick)).last;
  }

  /**
   * The aggregates of `tick`, ascending. Two in one tick are of opposite taker sides (so of different
   * prices): one side's fills at one price and instant are one aggregate. All fills of an aggregate share
   * its price, side and time (a taker order fills at once).
   */
  aggsInTick(tick: number): ModelAggregate[] {
    const first = this.lastAggId(tick - 1) + 1;
    const last = this.lastAggId(tick);
    const out: ModelAggregate[] = [];
    if (last < first) return out;
    const g = this.grid(dayOf(tick));
    const m = this.midOffset(tick);
    const firstBuyerMaker = unitFloat('sb-tm', this.venue, this.key, this.seed, first) < 0.5;
    for (let id = first; id <= last; id++) {
      const r = id - first;
      const buyerMaker = r % 2 === 0 ? firstBuyerMaker : !firstBuyerMaker;
      const ids = this.aggTradeIds(id);
      let qty = 0;
      for (let t = ids.first; t <= ids.last; t++) qty += this.tradeQty(g, t);
      out.push({
        id,
        firstTradeId: ids.first,
        lastTradeId: ids.last,
        timeMs: tick * STREAM_TICK_MS + r * 50 + Math.floor(unitFloat('sb-tt', this.venue, this.key, this.seed, id) * 40),
        priceTicks: g.centerTicks + (buyerMaker ? m - 1 : m + 1),
        qtyUnits: qty,
        buyerMaker,
      });
    }
    return out;
  }

  /** The trades of `tick`, ascending by id and time: each aggregate's fills with their own quantities. */
  tradesInTick(tick: number): ModelTrade[] {
    const out: ModelTrade[] = [];
    const aggs = this.aggsInTick(tick);
    if (aggs.length === 0) return out;
    const g = this.grid(dayOf(tick));
    for (const a of aggs) {
      for (let id = a.firstTradeId; id <= a.lastTradeId; id++) {
        out.push({ id, timeMs: a.timeMs, priceTicks: a.priceTicks, qtyUnits: this.tradeQty(g, id), buyerMaker: a.buyerMaker });
      }
    }
    return out;
  }

  /** The tick holding aggregate `id`. */
  tickOfAgg(id: number): number {
    let t = Math.floor(id / AGGS_PER_TICK) - 2;
    while (this.lastAggId(t) < id) t++;
    return t;
  }

  /** The tick holding trade `id`. */
  tickOfTrade(id: number): number {
    let a = Math.floor(id / (1 + MULTI_RATE)) - 2;
    while (this.aggTradeIds(a).last < id) a++;
    return this.tickOfAgg(a);
  }

  /** Aggregates with ids in `[fromId, toId]`, ascending. */
  aggsBetween(fromId: number, toId: number): ModelAggregate[] {
    const out: ModelAggregate[] = [];
    if (toId < fromId) return out;
    for (let t = this.tickOfAgg(fromId); ; t++) {
      for (const a of this.aggsInTick(t)) if (a.id >= fromId && a.id <= toId) out.push(a);
      if (this.lastAggId(t) >= toId) break;
    }
    return out;
  }

  /** Trades with ids in `[fromId, toId]`, ascending. */
  tradesBetween(fromId: number, toId: number): ModelTrade[] {
    const out: ModelTrade[] = [];
    if (toId < fromId) return out;
    for (let t = this.tickOfTrade(fromId); ; t++) {
      for (const trade of this.tradesInTick(t)) if (trade.id >= fromId && trade.id <= toId) out.push(trade);
      if (this.lastTradeId(t) >= toId) break;
    }
    return out;
  }

  formatPrice(priceTicks: number, decimals = this.priceDecimals): string {
    return (priceTicks / 10 ** this.priceDecimals).toFixed(decimals);
  }

  formatQty(qtyUnits: number, decimals = this.qtyDecimals): string {
    return (qtyUnits / 10 ** this.qtyDecimals).toFixed(decimals);
  }

  /** Aggregates up to `id` that fill two trades (rises by at most 1 per aggregate, as MULTI_RATE < 1). */
  private multiUpTo(id: number): number {
    return Math.floor((id + unitFloat('sb-multi', this.venue, this.key, this.seed, id)) * MULTI_RATE);
  }

  private tradeQty(g: DayGrid, id: number): number {
    return Math.max(1, Math.round((g.qtyScaleUnits / 200) * 10 ** (-2 * unitFloat('sb-tq', this.venue, this.key, this.seed, id))));
  }

  /** Signed quantity of grid level `j` after `tick`: positive a bid, negative an ask, 0 empty. */
  private entry(g: DayGrid, j: number, tick: number, m: number): number {
    const rel = j - HALF_LEVELS;
    if (rel === m) return 0;
    const top = rel === m - 1 || rel === m + 1;
    let draw: number;
    if (top) {
      draw = unitFloat('sb-top', this.venue, this.key, this.seed, g.day, j, tick);
    } else {
      const epoch = Math.floor((tick + (g.phases[j] ?? 0)) / (g.periods[j] ?? 1));
      if (unitFloat('sb-empty', this.venue, this.key, this.seed, g.day, j, epoch) < EMPTY_RATE) return 0;
      draw = unitFloat('sb-qty', this.venue, this.key, this.seed, g.day, j, epoch);
    }
    const qty = Math.max(1, Math.round(g.qtyScaleUnits * 10 ** (-3 * draw)));
    return rel < m ? qty : -qty;
  }

  private fullChanges(fromTick: number, toTick: number): BookChanges {
    const before = this.levels(fromTick, Number.MAX_SAFE_INTEGER);
    const after = this.levels(toTick, Number.MAX_SAFE_INTEGER);
    const diff = (a: TickLevel[], b: TickLevel[]): TickLevel[] => {
      const was = new Map(a);
      const out: TickLevel[] = [];
      for (const [p, q] of b) if (was.get(p) !== q) out.push([p, q]);
      const now = new Set(b.map(([p]) => p));
      for (const [p] of a) if (!now.has(p)) out.push([p, 0]);
      return out;
    };
    const bids = diff(before.bids, after.bids).sort((x, y) => y[0] - x[0]);
    const asks = diff(before.asks, after.asks).sort((x, y) => x[0] - y[0]);
    return { bids, asks };
  }

  private grid(day: number): DayGrid {
    let g = this.grids.get(day);
    if (g) return g;
    const scale = 10 ** this.priceDecimals;
    const centerTicks = Math.round(priceAt(this.venue, this.key, day * DAY_MS, this.seed) * scale);
    const periods = new Int32Array(2 * HALF_LEVELS + 1);
    const phases = new Int32Array(2 * HALF_LEVELS + 1);
    for (let j = 0; j < periods.length; j++) {
      const period = 8 + Math.floor(unitFloat('sb-period', this.venue, this.key, this.seed, day, j) * 192);
      periods[j] = period;
      phases[j] = Math.floor(unitFloat('sb-ph', this.venue, this.key, this.seed, day, j) * period);
    }
    g = { day, centerTicks, qtyScaleUnits: Math.round((1e5 / (centerTicks / scale)) * 10 ** this.qtyDecimals), periods, phases };
    // two days cover a diff across midnight; older grids are never asked for again
    if (this.grids.size >= 2) this.grids.delete(Math.min(...this.grids.keys()));
    this.grids.set(day, g);
    return g;
  }
}

function dayOf(tick: number): number {
  return Math.floor(tick / TICKS_PER_DAY);
}

function pushChange(out: BookChanges, priceTicks: number, before: number, after: number): void {
  const bidBefore = Math.max(before, 0);
  const bidAfter = Math.max(after, 0);
  if (bidBefore !== bidAfter) out.bids.push([priceTicks, bidAfter]);
  const askBefore = Math.max(-before, 0);
  const askAfter = Math.max(-after, 0);
  if (askBefore !== askAfter) out.asks.push([priceTicks, askAfter]);
}

const models = new Map<string, StreamBookModel>();

/** The shared model of one instrument (models are pure, so every connection and REST call can share one). */
export function streamModel(venue: string, symbol: string, seed: number, qtyDecimals: number): StreamBookModel {
  const id = `${venue}\u0000${canonicalSymbol(symbol)}\u0000${seed}\u0000${qtyDecimals}`;
  let m = models.get(id);
  if (!m) {
    m = new StreamBookModel(venue, symbol, seed, qtyDecimals);
    models.set(id, m);
  }
  return m;
}
