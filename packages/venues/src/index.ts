export * from './types.js';
export * from './venue-http-client.js';
export * from './venue-rejected-error.js';
export * from './create-venue-adapter.js';
export {
  AlpacaAdapter,
  alpacaUsage,
  ALPACA_ADJUSTMENTS,
  ALPACA_FEEDS,
  ALPACA_MAX_LIMIT,
  ALPACA_MAX_SYMBOLS_PER_REQUEST,
  type AlpacaAdapterOptions,
  type AlpacaAdjustment,
  type AlpacaFeed,
} from './alpaca/alpaca-adapter.js';
export { BinanceAdapter, binanceLimits, type BinanceAdapterOptions } from './binance/binance-adapter.js';
export { binanceDepthWeight, binanceWeights } from './binance/binance-weights.js';
export { binanceVenueSymbol, binanceSymbolBySuffix, KNOWN_QUOTES } from './binance/binance-symbols.js';
export { CcxtAdapter, ccxtExchangeJobs, CCXT_DEFAULTS, type CcxtAdapterOptions } from './ccxt/ccxt-adapter.js';
export { CCXT_VENUE_PREFIX, CoinbaseAdapter, isCcxtVenue, KrakenAdapter, type CcxtVenue } from './ccxt/ccxt-venues.js';
export { FinnhubAdapter, newYorkLocalMs, rateLimitUsage, type FinnhubAdapterOptions } from './finnhub/finnhub-adapter.js';
export { FredAdapter, TREASURY_CURVE, TREASURY_CURVE_SERIES, type FredAdapterOptions } from './fred/fred-adapter.js';
export { LimitlessAdapter, LIMITLESS_MAX_PAGE_SIZE, type LimitlessAdapterOptions } from './limitless/limitless-adapter.js';
export { PolygonAdapter, type PolygonAdapterOptions } from './polygon/polygon-adapter.js';
export { PolygonAuthError } from './polygon/polygon-auth-error.js';
export { PolygonPlanError } from './polygon/polygon-plan-error.js';
export { PolymarketAdapter, type PolymarketAdapterOptions } from './polymarket/polymarket-adapter.js';
export { XetraAdapter, XETRA_DEFAULTS, XETRA_MARKETS, xetraBackoffMs, type XetraAdapterOptions } from './xetra/xetra-adapter.js';
// What @tickfleet/streams' Binance session shares with the Binance adapter: the depth snapshot
// schema and weight, the symbol mapping, and the REST plumbing (base URL check, payload parsing,
// the budgeted HTTP client, exported above).
export { BinanceDepth } from './binance/binance-schemas.js';
export { normaliseBaseUrl } from './internal/options.js';
export { DECIMAL_RE, parsePayload } from './internal/parse-payload.js';
