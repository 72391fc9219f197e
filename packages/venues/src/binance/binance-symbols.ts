/**
 * Quote assets recognised when no exchangeInfo is loaded, longest first so `FDUSD` wins over `USD`
 * and `USDT` over `USD`.
 */
export const KNOWN_QUOTES = [
  'FDUSD',
  'USDT',
  'USDC',
  'TUSD',
  'BUSD',
  'USDP',
  'DAI',
  'EUR',
  'GBP',
  'TRY',
  'BRL',
  'JPY',
  'AUD',
  'RUB',
  'UAH',
  'ZAR',
  'PLN',
  'RON',
  'ARS',
  'MXN',
  'COP',
  'IDR',
  'BTC',
  'ETH',
  'BNB',
  'XRP',
  'TRX',
  'DOGE',
  'DOT',
  'SOL',
  'USD',
].sort((a, b) => b.length - a.length);

/** `BTC/USDT` -> `BTCUSDT`. A symbol without a slash is taken to be in venue form already. */
export function binanceVenueSymbol(symbol: string): string {
  return symbol.replace('/', '').toUpperCase();
}

/** `BTCUSDT` -> `BTC/USDT` by known quote suffix; returns the input unchanged when no suffix matches. */
export function binanceSymbolBySuffix(venueSymbol: string): string {
  const upper = venueSymbol.toUpperCase();
  for (const quote of KNOWN_QUOTES) {
    if (upper.length > quote.length && upper.endsWith(quote)) return `${upper.slice(0, -quote.length)}/${quote}`;
  }
  return upper;
}
