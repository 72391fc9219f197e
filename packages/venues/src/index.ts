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
export { BinanceAdapter, type BinanceAdapterOptions } from './binance/binance-adapter.js';
export { binanceDepthWeight, binanceWeights } from './binance/binance-weights.js';
export { binanceVenueSymbol, binanceSymbolBySuffix, KNOWN_QUOTES } from './binance/binance-symbols.js';
export { FinnhubAdapter, newYorkLocalMs, rateLimitUsage, type FinnhubAdapterOptions } from './finnhub/finnhub-adapter.js';
export { FredAdapter, TREASURY_CURVE, TREASURY_CURVE_SERIES, type FredAdapterOptions } from './fred/fred-adapter.js';
export { LimitlessAdapter, LIMITLESS_MAX_PAGE_SIZE, type LimitlessAdapterOptions } from './limitless/limitless-adapter.js';
export { PolygonAdapter, type PolygonAdapterOptions } from './polygon/polygon-adapter.js';
export { PolygonAuthError } from './polygon/polygon-auth-error.js';
export { PolygonPlanError } from './polygon/polygon-plan-error.js';
export { PolymarketAdapter, type PolymarketAdapterOptions } from './polymarket/polymarket-adapter.js';
export { XetraAdapter, XETRA_DEFAULTS, XETRA_MARKETS, xetraBackoffMs, type XetraAdapterOptions } from './xetra/xetra-adapter.js';
export {
  type StreamEvent,
  type StreamRestRequest,
  type StreamSession,
  type StreamSessionOptions,
  type StreamSessionStats,
  type StreamState,
  type TimeQuality,
} from './streams/stream-session.js';
export {
  BinanceStreamSession,
  BINANCE_AGG_TRADES_WEIGHT,
  BINANCE_CONNECTION_ATTEMPTS,
  BINANCE_MAX_STREAMS_PER_CONNECTION,
  type BinanceStreamSessionOptions,
} from './streams/binance-stream-session.js';
export { KrakenStreamSession, KRAKEN_BOOK_DEPTHS, type KrakenStreamSessionOptions } from './streams/kraken-stream-session.js';
export { krakenBookChecksum } from './streams/kraken-checksum.js';
