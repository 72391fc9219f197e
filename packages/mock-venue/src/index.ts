export { startMockVenue, MockVenueServer, type MockVenue, type MockVenueOptions } from './mock-venue-server.js';
export {
  DEFAULT_LIMITS,
  DEFAULT_SEED,
  effectiveLimit,
  Holes,
  Latency,
  loadScenarioFile,
  mergeScenario,
  MOCK_VENUES,
  MockVenueName,
  parseScenario,
  Scenario,
  TimeWindow,
  VenueLimit,
  VenueScenario,
  type EffectiveLimit,
} from './scenario.js';
export type { LatencySummary, MockVenueStats, ScopeStats, VenueStats } from './stats.js';
export {
  candleAt,
  candleValuesAt,
  canonicalSymbol,
  expectedCandles,
  formatDecimal,
  isHole,
  priceAt,
  priceDecimals,
  type CandleValues,
  type ExpectedCandlesOptions,
} from './data/candles.js';
export { bookAt, DEFAULT_BOOK_DEPTH, POLYMARKET_MAX_LEVELS } from './data/books.js';
export {
  DEFAULT_XETRA_ISINS,
  isXetraSource,
  minuteHasTrades,
  parseXetraFileName,
  tradesInFile,
  tradesInMinute,
  XETRA_SOURCES,
  xetraFileName,
  xetraFilesBetween,
  type XetraPostTrade,
  type XetraSource,
} from './data/trades.js';
export { DEFAULT_POLYMARKET_MARKETS, marketTokenIds, polymarketMarkets, type PolymarketMarket } from './data/markets.js';
export { DEFAULT_LIMITLESS_MARKETS, limitlessBookSlugs, limitlessMarkets, type LimitlessMarket } from './venues/limitless-markets.js';
export { LIMITLESS_PAGE_LIMIT, rawSize as limitlessRawSize } from './venues/limitless-emulation.js';
export { binanceInstrument, DEFAULT_BINANCE_SYMBOLS, type BinanceInstrument } from './data/symbols.js';
export { depthWeight } from './venues/binance-emulation.js';
export { XETRA_LISTING_MS } from './venues/xetra-emulation.js';
