import { ValidationError } from '@tickfleet/core';

/**
 * The symbol shapes the candle venues' adapters turn into valid requests, checked before anything
 * is stored: a symbol the venue can never list would only produce units that fail with 400.
 * Venues without an entry take any valid tickfleet symbol.
 */
const SHAPES: Record<string, { pattern: RegExp; expected: string }> = {
  // The adapter drops the slash and upper-cases: BTC/USDT -> BTCUSDT (or BTCUSDT as given).
  binance: { pattern: /^[A-Za-z0-9]{2,20}(\/[A-Za-z0-9]{2,20})?$/, expected: 'a Binance pair such as BTC/USDT (or BTCUSDT)' },
  // Stock tickers, with a class suffix (BRK.B).
  alpaca: { pattern: /^[A-Za-z0-9]{1,10}(\.[A-Za-z0-9]{1,5})?$/, expected: 'an Alpaca stock ticker such as AAPL or BRK.B' },
  polygon: { pattern: /^[A-Za-z0-9]{1,10}(\.[A-Za-z0-9]{1,5})?$/, expected: 'a Polygon stock ticker such as AAPL or BRK.B' },
};

export function assertVenueSymbol(venue: string, symbol: string): void {
  const shape = SHAPES[venue];
  if (shape && !shape.pattern.test(symbol)) throw new ValidationError('symbol', shape.expected, symbol);
}
