import { ValidationError } from '@tickfleet/core';
import { BinanceAdapter } from './binance/binance-adapter.js';
import { ADAPTER_VENUES, createVenueAdapter, hasVenueAdapter } from './create-venue-adapter.js';
import { LimitlessAdapter } from './limitless/limitless-adapter.js';
import { PolygonAdapter } from './polygon/polygon-adapter.js';
import { PolymarketAdapter } from './polymarket/polymarket-adapter.js';
import { isBookSource, isCandleSource, isFileSource } from './types.js';
import { XetraAdapter } from './xetra/xetra-adapter.js';

describe('createVenueAdapter', () => {
  it('builds one adapter class per venue with its capabilities and declared weights', () => {
    const base = { baseUrl: 'http://127.0.0.1:1/x' };
    const binance = createVenueAdapter('binance', { ...base, depthLimit: 1000 });
    const polygon = createVenueAdapter('polygon', { ...base, apiKey: 'k' });
    const polymarket = createVenueAdapter('polymarket', base);
    const xetra = createVenueAdapter('xetra', base);
    const limitless = createVenueAdapter('limitless', base);
    expect(limitless).toBeInstanceOf(LimitlessAdapter);
    expect(binance).toBeInstanceOf(BinanceAdapter);
    expect(polygon).toBeInstanceOf(PolygonAdapter);
    expect(polymarket).toBeInstanceOf(PolymarketAdapter);
    expect(xetra).toBeInstanceOf(XetraAdapter);
    expect([binance, polygon, polymarket, xetra, limitless].map((a) => [a.venue, isCandleSource(a), isBookSource(a), isFileSource(a)])).toEqual([
      ['binance', true, true, false],
      ['polygon', true, false, false],
      ['polymarket', false, true, false],
      ['xetra', false, false, true],
      ['limitless', false, true, false],
    ]);
    expect(binance.weights).toEqual({ klines: 2, depth: 50, exchangeInfo: 20, aggTrades: 4, historicalTrades: 25, bookTicker: 2, bookTickers: 4 });
    expect(polygon.weights).toEqual({ aggs: 1 });
    expect(polymarket.weights).toEqual({ markets: 1, book: 1, books: 3 });
    expect(xetra.weights).toEqual({ list: 1, download: 1 });
    expect(limitless.weights).toEqual({ markets: 1, orderbook: 1 });
    expect(binance.maxCandlesPerPage).toBe(1000);
    expect(polygon.maxCandlesPerPage).toBe(5000);
    expect(ADAPTER_VENUES.every(hasVenueAdapter)).toBe(true);
  });

  it('maps symbols between tickfleet and venue form', () => {
    const binance = createVenueAdapter('binance', { baseUrl: 'https://api.binance.com' });
    expect(['BTC/USDT', 'ETH/BTC', 'PEPE/FDUSD'].map((s) => binance.toVenueSymbol(s))).toEqual(['BTCUSDT', 'ETHBTC', 'PEPEFDUSD']);
    expect(['BTCUSDT', 'ETHBTC', 'PEPEFDUSD', 'BNBEUR', 'XYZ'].map((s) => binance.fromVenueSymbol(s))).toEqual([
      'BTC/USDT',
      'ETH/BTC',
      'PEPE/FDUSD',
      'BNB/EUR',
      'XYZ',
    ]);
    const xetra = createVenueAdapter('xetra', { baseUrl: 'https://mfs.deutsche-boerse.com/api' });
    expect(xetra.toVenueSymbol('DE0007100000')).toBe('DE0007100000');
  });

  it('rejects unknown venues and bad options naming them', () => {
    expect(() => createVenueAdapter('bitstamp', { baseUrl: 'https://www.bitstamp.net' })).toThrow(ValidationError);
    expect(() => createVenueAdapter('bitstamp', { baseUrl: 'https://www.bitstamp.net' })).toThrow(/invalid venue.*ccxt-<exchange>/);
    expect(hasVenueAdapter('ccxt-bitstamp')).toBe(true);
    expect(hasVenueAdapter('ccxt-')).toBe(false);
    expect(() => createVenueAdapter('binance', { baseUrl: 'ftp://x' })).toThrow(/invalid baseUrl/);
    expect(() => createVenueAdapter('binance', { baseUrl: 'https://x', maxCandlesPerPage: 5000 })).toThrow(
      /invalid maxCandlesPerPage: expected an integer from 1 to 1000/,
    );
    expect(() => createVenueAdapter('xetra', { baseUrl: 'https://x', markets: ['detr'] })).toThrow(/invalid markets/);
  });
});
