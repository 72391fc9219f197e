import { timeframeMs, ValidationError } from '@tickfleet/core';
import { bookAt } from './books.js';
import { expectedCandles } from '../expected-candles.js';
import { candleAt, isHole, priceAt } from './candles.js';
import { hash32 } from './random.js';
import { marketTokenIds, polymarketMarkets } from './markets.js';
import { parseXetraFileName, tradesInFile, tradesInMinute, xetraFileName, xetraFilesBetween } from './trades.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0);

describe('deterministic data', () => {
  test('a candle open time off the timeframe grid is a ValidationError naming openTimeMs', () => {
    expect(() => candleAt('binance', 'BTC/USDT', '1m', T0 + 1, 42)).toThrow(ValidationError);
    expect(() => candleAt('binance', 'BTC/USDT', '1h', T0 + 60_000, 42)).toThrow(`invalid openTimeMs: expected an open time aligned to 1h, got ${T0 + 60_000}`);
  });

  test('the same (venue, symbol, time, seed) gives the same candle; another seed gives another', () => {
    const a = candleAt('binance', 'BTC/USDT', '1m', T0, 42);
    expect(candleAt('binance', 'BTC/USDT', '1m', T0, 42)).toEqual(a);
    expect(candleAt('binance', 'BTC/USDT', '1m', T0, 43)).not.toEqual(a);
    expect(candleAt('polygon', 'BTC/USDT', '1m', T0, 42).open).not.toEqual(a.open);
    // tickfleet and venue spellings of a pair are one instrument
    expect(candleAt('binance', 'BTCUSDT', '1m', T0, 42)).toEqual({ ...a, symbol: 'BTCUSDT' });
  });

  test('values are pinned: the series memo and prefix hashing give what per-value hashing gave', () => {
    // Computed with the code before the memo (every value hashed all its parts), called in this
    // order: the instrument changes between calls, so a memo that kept a stale series would differ.
    expect([
      candleAt('binance', 'BTC/USDT', '1m', T0, 42),
      candleAt('polygon', 'AAPL', '1h', T0, 7),
      candleAt('binance', 'ETHUSDT', '1d', Date.UTC(2024, 0, 15), 42),
      candleAt('binance', 'BTC/USDT', '1m', T0 + 60_000, 42),
    ]).toEqual([
      {
        venue: 'binance',
        symbol: 'BTC/USDT',
        timeframe: '1m',
        openTime: T0,
        open: '6.43166000',
        high: '6.44452000',
        low: '6.41464000',
        close: '6.42599000',
        volume: '3483.66240000',
        trades: 220,
      },
      {
        venue: 'polygon',
        symbol: 'AAPL',
        timeframe: '1h',
        openTime: T0,
        open: '41.109',
        high: '41.111',
        low: '41.026',
        close: '41.077',
        volume: '4561.1103',
        trades: 3688,
      },
      {
        venue: 'binance',
        symbol: 'ETHUSDT',
        timeframe: '1d',
        openTime: Date.UTC(2024, 0, 15),
        open: '97.47100000',
        high: '101.43100000',
        low: '97.45800000',
        close: '101.37800000',
        volume: '8565.96070000',
        trades: 11352,
      },
      {
        venue: 'binance',
        symbol: 'BTC/USDT',
        timeframe: '1m',
        openTime: T0 + 60_000,
        open: '6.42599000',
        high: '6.43440000',
        low: '6.41351000',
        close: '6.43100000',
        volume: '7036.25010000',
        trades: 293,
      },
    ]);
    expect(priceAt('xetra', 'DE0007164600', T0 + 123, 42)).toBe(21452.861246559183);
    expect([hash32('a', 1, 'bc'), hash32()]).toEqual([77936519, 2872998923]);
  });

  test('candles are consistent: close joins the next open, high/low bound the body', () => {
    const candles = expectedCandles('binance', 'ETH/USDT', '5m', T0, T0 + 60 * 60_000, 7, { nowMs: T0 + 10 * 86_400_000 });
    expect(candles).toHaveLength(12);
    for (let i = 0; i < candles.length; i++) {
      const c = candles[i]!;
      expect(c.openTime).toBe(T0 + i * timeframeMs('5m'));
      expect(Number(c.high)).toBeGreaterThanOrEqual(Math.max(Number(c.open), Number(c.close)));
      expect(Number(c.low)).toBeLessThanOrEqual(Math.min(Number(c.open), Number(c.close)));
      expect(c.open).toMatch(/^\d+\.\d{8}$/);
      if (i > 0) expect(c.open).toBe(candles[i - 1]!.close);
    }
  });

  test('expectedCandles is half-open, closed-only and honours holes', () => {
    const now = T0 + 10 * 60_000 + 30_000; // 08:10:30: the 08:09 candle is the last closed one
    const all = expectedCandles('binance', 'BTC/USDT', '1m', T0, T0 + 3600_000, 42, { nowMs: now });
    expect(all.map((c) => c.openTime)).toEqual(Array.from({ length: 10 }, (_, i) => T0 + i * 60_000));
    expect(expectedCandles('binance', 'BTC/USDT', '1m', T0 + 1, T0 + 3 * 60_000, 42, { nowMs: now }).map((c) => c.openTime)).toEqual([
      T0 + 60_000,
      T0 + 120_000,
    ]);
    const holes = { ranges: [{ symbol: 'BTCUSDT', fromMs: T0 + 2 * 60_000, toMs: T0 + 4 * 60_000 }] };
    const holed = expectedCandles('binance', 'BTC/USDT', '1m', T0, T0 + 3600_000, 42, { nowMs: now, holes });
    expect(holed.map((c) => (c.openTime - T0) / 60_000)).toEqual([0, 1, 4, 5, 6, 7, 8, 9]);
    // another symbol is untouched by a symbol-scoped range
    expect(expectedCandles('binance', 'ETH/USDT', '1m', T0, T0 + 3600_000, 42, { nowMs: now, holes })).toHaveLength(10);
    // a rate removes a deterministic fraction
    const day = expectedCandles('binance', 'BTC/USDT', '1m', T0, T0 + 86_400_000, 42, { nowMs: T0 + 2 * 86_400_000, holes: { rate: 0.1 } });
    expect(day.length).toBeGreaterThan(1440 * 0.85);
    expect(day.length).toBeLessThan(1440 * 0.95);
    expect(day.every((c) => !isHole('binance', 'BTC/USDT', '1m', c.openTime, 42, { rate: 0.1 }))).toBe(true);
    // Pinned, as the code before the series memo drew them: 1,281 kept, the first holes at these minutes.
    expect(day).toHaveLength(1281);
    const kept = new Set(day.map((c) => (c.openTime - T0) / 60_000));
    expect([20, 33, 39, 42, 64, 70, 71, 74].every((m) => !kept.has(m))).toBe(true);
    expect(Array.from({ length: 20 }, (_, m) => m).every((m) => kept.has(m))).toBe(true);
  });

  test('bookAt: pure per second, best first, bids below asks', () => {
    const b = bookAt('binance', 'BTC/USDT', T0 + 1500, 42, 20);
    expect(bookAt('binance', 'BTC/USDT', T0 + 1999, 42, 20).bids).toEqual(b.bids);
    expect(b.sequence).toBe((T0 + 1000) / 1000);
    expect(b.bids).toHaveLength(20);
    expect(b.asks).toHaveLength(20);
    const bidPrices = b.bids.map(([p]) => Number(p));
    const askPrices = b.asks.map(([p]) => Number(p));
    expect([...bidPrices].sort((x, y) => y - x)).toEqual(bidPrices);
    expect([...askPrices].sort((x, y) => x - y)).toEqual(askPrices);
    expect(bidPrices[0]!).toBeLessThan(askPrices[0]!);
    expect(bookAt('binance', 'BTC/USDT', T0 + 1500, 43, 20).bids).not.toEqual(b.bids);
    const pm = bookAt('polymarket', '123', T0, 42);
    for (const [p] of [...pm.bids, ...pm.asks]) expect(Number(p)).toBeGreaterThanOrEqual(0.01);
    for (const [p] of [...pm.bids, ...pm.asks]) expect(Number(p)).toBeLessThanOrEqual(0.99);
  });

  test('xetra files: names round-trip, trades carry the documented fields, empty minutes have no file', () => {
    const name = xetraFileName('DETR', T0 + 59_999);
    expect(name).toBe('DETR-posttrade-2024-01-15T08_00.json.gz');
    expect(parseXetraFileName(name)).toEqual({ source: 'DETR', minuteMs: T0 });
    expect(parseXetraFileName('XXXX-posttrade-2024-01-15T08_00.json.gz')).toBeUndefined();
    const files = xetraFilesBetween('DETR', T0, T0 + 60 * 60_000, 42);
    expect(files.length).toBeGreaterThan(50);
    const trades = tradesInFile(files[0]!, 42)!;
    expect(trades.length).toBeGreaterThan(0);
    expect(tradesInFile(files[0]!, 42)).toEqual(trades);
    const t = trades[0]!;
    expect(t).toMatchObject({ messageId: 'posttrade', sourceName: 'ETR', currency: 'EUR', executionVenueId: 'XETA', quotationType: 1 });
    expect(t.lastTradeTime).toMatch(/^2024-01-15T08:\d{2}:\d{2}\.\d{9}Z$/);
    expect(t.transIdCode).toMatch(/^\d{52}$/);
    expect(t.instrumentId).toBe(t.isin);
    const times = trades.map((x) => x.lastTradeTime);
    expect([...times].sort()).toEqual(times);
    // a minute with no trades publishes no file
    let empty = T0;
    while (tradesInMinute('DETR', empty, 42).length > 0) empty += 60_000;
    expect(tradesInFile(xetraFileName('DETR', empty), 42)).toBeUndefined();
    expect(xetraFilesBetween('DETR', empty, empty + 60_000, 42)).toEqual([]);
  });

  test('polymarket markets: stable ids, JSON-encoded token ids, every fifth closed', () => {
    const m = polymarketMarkets(42, 10);
    expect(polymarketMarkets(42, 10)).toEqual(m);
    expect(polymarketMarkets(43, 10)[0]!.conditionId).not.toBe(m[0]!.conditionId);
    expect(m.filter((x) => x.closed)).toHaveLength(2);
    const ids = marketTokenIds(m[0]!);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toMatch(/^\d{77}$/);
    expect(m[0]!.clobTokenIds).toBe(`["${ids[0]}", "${ids[1]}"]`);
    expect(m[0]!.outcomes).toBe('["Yes", "No"]');
  });
});
