import { hash32 } from '../data/random.js';
import { lastClosedTick, STREAM_TICK_MS, streamModel, type ModelTrade, type StreamBookModel, type TickLevel } from './stream-book-model.js';

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

/** A REST answer body, or the Binance error it must be turned into. */
export type TradesResult = { body: string } | { status: number; code: number; msg: string };

/**
 * `GET /api/v3/aggTrades`: each emulated aggregate holds exactly one trade, so `a = f = l =` the trade id
 * and healing a trade-id gap by `fromId` returns exactly the missing trades.
 */
export function binanceAggTrades(pair: string, query: URLSearchParams, nowMs: number, seed: number): TradesResult {
  const picked = pickTrades(binanceModel(pair, seed), query, nowMs, true);
  if ('status' in picked) return picked;
  const { model, trades } = picked;
  const rows = trades.map(
    (t) =>
      `{"a":${t.id},"p":"${model.formatPrice(t.priceTicks, BINANCE_DECIMALS)}","q":"${model.formatQty(t.qtyUnits, BINANCE_DECIMALS)}",` +
      `"f":${t.id},"l":${t.id},"T":${t.timeMs},"m":${t.buyerMaker},"M":true}`,
  );
  return { body: `[${rows.join(',')}]` };
}

/** `GET /api/v3/historicalTrades` (by `fromId`) and `GET /api/v3/trades` (the most recent). */
export function binanceHistoricalTrades(pair: string, query: URLSearchParams, nowMs: number, seed: number): TradesResult {
  const picked = pickTrades(binanceModel(pair, seed), query, nowMs, false);
  if ('status' in picked) return picked;
  const { model, trades } = picked;
  const scale = 10 ** model.priceDecimals;
  const qtyScale = 10 ** model.qtyDecimals;
  const rows = trades.map(
    (t) =>
      `{"id":${t.id},"price":"${model.formatPrice(t.priceTicks, BINANCE_DECIMALS)}","qty":"${model.formatQty(t.qtyUnits, BINANCE_DECIMALS)}",` +
      `"quoteQty":"${((t.priceTicks / scale) * (t.qtyUnits / qtyScale)).toFixed(BINANCE_DECIMALS)}","time":${t.timeMs},"isBuyerMaker":${t.buyerMaker},"isBestMatch":true}`,
  );
  return { body: `[${rows.join(',')}]` };
}

function pickTrades(
  model: StreamBookModel,
  query: URLSearchParams,
  nowMs: number,
  timeRange: boolean,
): { model: StreamBookModel; trades: ModelTrade[] } | { status: number; code: number; msg: string } {
  const limitRaw = query.get('limit');
  const limit = limitRaw === null || limitRaw === '' ? TRADES_DEFAULT_LIMIT : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1) return illegal('limit');
  const n = Math.min(limit, TRADES_MAX_LIMIT);
  const lastId = model.lastTradeId(lastClosedTick(nowMs));
  const fromId = intParam(query, 'fromId');
  const startTime = timeRange ? intParam(query, 'startTime') : undefined;
  const endTime = timeRange ? intParam(query, 'endTime') : undefined;
  if (fromId === null) return illegal('fromId');
  if (startTime === null) return illegal('startTime');
  if (endTime === null) return illegal('endTime');
  if (fromId !== undefined) return { model, trades: model.tradesBetween(fromId, Math.min(lastId, fromId + n - 1)) };
  if (startTime !== undefined && endTime !== undefined && endTime - startTime > HOUR_MS) {
    return { status: 400, code: -1127, msg: 'More than 1 hours between startTime and endTime.' };
  }
  if (startTime !== undefined) {
    const first = model.lastTradeId(Math.floor(startTime / STREAM_TICK_MS) - 1) + 1;
    const endId = endTime !== undefined ? model.lastTradeId(Math.floor(endTime / STREAM_TICK_MS)) : Number.POSITIVE_INFINITY;
    const trades = model
      .tradesBetween(first, Math.min(lastId, endId, first + n + 2))
      .filter((t) => t.timeMs >= startTime && (endTime === undefined || t.timeMs <= endTime))
      .slice(0, n);
    return { model, trades };
  }
  const newest = endTime !== undefined ? Math.min(lastId, model.lastTradeId(Math.floor(endTime / STREAM_TICK_MS))) : lastId;
  const trades = model.tradesBetween(newest - n - 2, newest).filter((t) => endTime === undefined || t.timeMs <= endTime);
  return { model, trades: trades.slice(-n) };
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
