import { hash32 } from '../data/random.js';
import {
  lastClosedTick,
  STREAM_TICK_MS,
  streamModel,
  type ModelAggregate,
  type ModelTrade,
  type StreamBookModel,
  type TickLevel,
} from './stream-book-model.js';

/** Binance quantities move in steps of 0.00001 (printed with 8 places, as every Binance decimal). */
const BINANCE_QTY_DECIMALS = 5;
const BINANCE_DECIMALS = 8;
const TRADES_DEFAULT_LIMIT = 500;
const TRADES_MAX_LIMIT = 1000;
const HOUR_MS = 3_600_000;

/** The Binance instrument model behind the WebSocket streams and the REST depth / trade endpoints. */
export function binanceModel(pair: string, seed: number): StreamBookModel {
  return streamModel('binance', pair, seed, BINANCE_QTY_DECIMALS);
}

/**
 * The last update id of the book after `tick`. Ids advance 1..15 per tick and never repeat, so a diff
 * over ticks `(a, b]` carries `U = updateId(a) + 1` and `u = updateId(b)`, and consecutive diffs satisfy
 * Binance's `U = previous u + 1`. O(1): `8 * tick + (hash mod 8)` rises by at least 1 per tick.
 */
export function binanceUpdateId(model: StreamBookModel, tick: number): number {
  return 8 * tick + (hash32('bn-uid', model.key, model.seed, tick) % 8);
}

/** `GET /api/v3/depth` body at `nowMs`: the book after the last closed tick, `lastUpdateId` its update id. */
export function binanceDepthSnapshot(pair: string, nowMs: number, seed: number, limit: number): string {
  const model = binanceModel(pair, seed);
  const tick = lastClosedTick(nowMs);
  const { bids, asks } = model.levels(tick, limit);
  return JSON.stringify({ lastUpdateId: binanceUpdateId(model, tick), bids: printLevels(model, bids), asks: printLevels(model, asks) });
}

/** The book `GET /api/v3/depth` served with `lastUpdateId` (update ids of tick `t` lie in `[8t, 8t + 7]`), printed as Binance prints it. */
export function binanceBookAtUpdateId(
  pair: string,
  lastUpdateId: number,
  seed: number,
  depth: number,
): { bids: Array<[string, string]>; asks: Array<[string, string]> } {
  const model = binanceModel(pair, seed);
  const { bids, asks } = model.levels(Math.floor(lastUpdateId / 8), depth);
  return { bids: printLevels(model, bids), asks: printLevels(model, asks) };
}

/** `<symbol>@depth` / `@depth@100ms` payload for the changes over ticks `(fromTick, toTick]`. */
export function binanceDepthEvent(model: StreamBookModel, symbol: string, fromTick: number, toTick: number): string {
  const { bids, asks } = model.changes(fromTick, toTick);
  return (
    `{"e":"depthUpdate","E":${(toTick + 1) * STREAM_TICK_MS},"s":"${symbol}","U":${binanceUpdateId(model, fromTick) + 1},` +
    `"u":${binanceUpdateId(model, toTick)},"b":${JSON.stringify(printLevels(model, bids))},"a":${JSON.stringify(printLevels(model, asks))}}`
  );
}

/** `<symbol>@trade` payload (the 2025 field set: e, E, s, t, p, q, T, m, M). */
export function binanceTradeEvent(model: StreamBookModel, symbol: string, trade: ModelTrade, eventTimeMs: number): string {
  return (
    `{"e":"trade","E":${eventTimeMs},"s":"${symbol}","t":${trade.id},"p":"${model.formatPrice(trade.priceTicks, BINANCE_DECIMALS)}",` +
    `"q":"${model.formatQty(trade.qtyUnits, BINANCE_DECIMALS)}","T":${trade.timeMs},"m":${trade.buyerMaker},"M":true}`
  );
}

/** `<symbol>@aggTrade` payload (e, E, s, a, p, q, f, l, T, m, M): the aggregate `GET /api/v3/aggTrades` serves with that `a`. */
export function binanceAggTradeEvent(model: StreamBookModel, symbol: string, agg: ModelAggregate, eventTimeMs: number): string {
  return (
    `{"e":"aggTrade","E":${eventTimeMs},"s":"${symbol}","a":${agg.id},"p":"${model.formatPrice(agg.priceTicks, BINANCE_DECIMALS)}",` +
    `"q":"${model.formatQty(agg.qtyUnits, BINANCE_DECIMALS)}","f":${agg.firstTradeId},"l":${agg.lastTradeId},"T":${agg.timeMs},"m":${agg.buyerMaker},"M":true}`
  );
}

/** A REST answer body, or the Binance error it must be turned into. */
export type TradesResult = { body: string } | { status: number; code: number; msg: string };

/**
 * `GET /api/v3/aggTrades`: the tape's aggregates (one taker side's fills at one price and instant; `a` its own
 * sequence, `f`..`l` the trade ids, `q` their sum). `fromId` is an aggregate id; `startTime`/`endTime` select
 * by `T`, inclusive, less than 1 h apart.
 */
export function binanceAggTrades(pair: string, query: URLSearchParams, nowMs: number, seed: number): TradesResult {
  const model = binanceModel(pair, seed);
  const picked = pick(query, nowMs, true, {
    lastId: (tick) => model.lastAggId(tick),
    between: (from, to) => model.aggsBetween(from, to),
  });
  if ('status' in picked) return picked;
  const rows = picked.map(
    (a) =>
      `{"a":${a.id},"p":"${model.formatPrice(a.priceTicks, BINANCE_DECIMALS)}","q":"${model.formatQty(a.qtyUnits, BINANCE_DECIMALS)}",` +
      `"f":${a.firstTradeId},"l":${a.lastTradeId},"T":${a.timeMs},"m":${a.buyerMaker},"M":true}`,
  );
  return { body: `[${rows.join(',')}]` };
}

/** `GET /api/v3/historicalTrades` (by trade id `fromId`) and `GET /api/v3/trades` (the most recent): every fill on its own. */
export function binanceHistoricalTrades(pair: string, query: URLSearchParams, nowMs: number, seed: number): TradesResult {
  const model = binanceModel(pair, seed);
  const picked = pick(query, nowMs, false, {
    lastId: (tick) => model.lastTradeId(tick),
    between: (from, to) => model.tradesBetween(from, to),
  });
  if ('status' in picked) return picked;
  const scale = 10 ** model.priceDecimals;
  const qtyScale = 10 ** model.qtyDecimals;
  const rows = picked.map(
    (t) =>
      `{"id":${t.id},"price":"${model.formatPrice(t.priceTicks, BINANCE_DECIMALS)}","qty":"${model.formatQty(t.qtyUnits, BINANCE_DECIMALS)}",` +
      `"quoteQty":"${((t.priceTicks / scale) * (t.qtyUnits / qtyScale)).toFixed(BINANCE_DECIMALS)}","time":${t.timeMs},"isBuyerMaker":${t.buyerMaker},"isBestMatch":true}`,
  );
  return { body: `[${rows.join(',')}]` };
}

/** A sequence of the tape (aggregates or trades): its last id at the end of a tick, and its rows by id range. */
interface TapeSequence<T extends { timeMs: number }> {
  lastId(tick: number): number;
  between(fromId: number, toId: number): T[];
}

function pick<T extends { timeMs: number }>(
  query: URLSearchParams,
  nowMs: number,
  timeRange: boolean,
  seq: TapeSequence<T>,
): T[] | { status: number; code: number; msg: string } {
  const limitRaw = query.get('limit');
  const limit = limitRaw === null || limitRaw === '' ? TRADES_DEFAULT_LIMIT : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1) return illegal('limit');
  const n = Math.min(limit, TRADES_MAX_LIMIT);
  const lastId = seq.lastId(lastClosedTick(nowMs));
  const fromId = intParam(query, 'fromId');
  const startTime = timeRange ? intParam(query, 'startTime') : undefined;
  const endTime = timeRange ? intParam(query, 'endTime') : undefined;
  if (fromId === null) return illegal('fromId');
  if (startTime === null) return illegal('startTime');
  if (endTime === null) return illegal('endTime');
  if (fromId !== undefined) return seq.between(fromId, Math.min(lastId, fromId + n - 1));
  if (startTime !== undefined && endTime !== undefined && endTime - startTime > HOUR_MS) {
    return { status: 400, code: -1127, msg: 'More than 1 hours between startTime and endTime.' };
  }
  if (startTime !== undefined) {
    const first = seq.lastId(Math.floor(startTime / STREAM_TICK_MS) - 1) + 1;
    const endId = endTime !== undefined ? seq.lastId(Math.floor(endTime / STREAM_TICK_MS)) : Number.POSITIVE_INFINITY;
    return seq
      .between(first, Math.min(lastId, endId, first + n + 2))
      .filter((t) => t.timeMs >= startTime && (endTime === undefined || t.timeMs <= endTime))
      .slice(0, n);
  }
  const newest = endTime !== undefined ? Math.min(lastId, seq.lastId(Math.floor(endTime / STREAM_TICK_MS))) : lastId;
  return seq
    .between(newest - n - 2, newest)
    .filter((t) => endTime === undefined || t.timeMs <= endTime)
    .slice(-n);
}

/** undefined when absent, null when not a non-negative integer. */
function intParam(query: URLSearchParams, name: string): number | undefined | null {
  const v = query.get(name);
  if (v === null || v === '') return undefined;
  return /^\d{1,20}$/.test(v) ? Number(v) : null;
}

function illegal(param: string): { status: number; code: number; msg: string } {
  return { status: 400, code: -1100, msg: `Illegal characters found in parameter '${param}'; legal range is '^[0-9]{1,20}$'.` };
}

function printLevels(model: StreamBookModel, levels: TickLevel[]): Array<[string, string]> {
  return levels.map(([p, q]) => [model.formatPrice(p, BINANCE_DECIMALS), model.formatQty(q, BINANCE_DECIMALS)]);
}
