/** Pairs the Binance emulation lists in exchangeInfo (tickfleet form); scenarios can add more. */
export const DEFAULT_BINANCE_SYMBOLS: readonly string[] = [
  'BTC/USDT',
  'ETH/USDT',
  'BNB/USDT',
  'SOL/USDT',
  'XRP/USDT',
  'ADA/USDT',
  'DOGE/USDT',
  'AVAX/USDT',
  'DOT/USDT',
  'LINK/USDT',
  'LTC/USDT',
  'TRX/USDT',
  'ATOM/USDT',
  'NEAR/USDT',
  'ETH/BTC',
  'BNB/BTC',
  'SOL/BTC',
  'XRP/BTC',
  'BTC/FDUSD',
  'BTC/USDC',
  'ETH/USDC',
  'BTC/EUR',
  'ETH/EUR',
  'BTC/TRY',
];

/** One Binance instrument: tickfleet `BTC/USDT` is venue `BTCUSDT`. */
export interface BinanceInstrument {
  symbol: string;
  baseAsset: string;
  quoteAsset: string;
}

export function binanceInstrument(pair: string): BinanceInstrument {
  const [base = '', quote = ''] = pair.split('/');
  return { symbol: `${base}${quote}`, baseAsset: base, quoteAsset: quote };
}
