export { startMockVenue, MockVenueServer, type MockVenue, type MockVenueOptions } from './mock-venue-server.js';
export {
  DEFAULT_LIMITS,
  DEFAULT_SEED,
  emulatedLimit,
  Holes,
  Latency,
  mergeScenario,
  MOCK_VENUES,
  MockVenueName,
  parseScenario,
  Scenario,
  TimeWindow,
  VenueLimit,
  VenueScenario,
  STREAM_VENUES,
  StreamScenario,
  type StreamVenueName,
  type EmulatedLimit,
} from './scenario.js';
export type { LatencySummary, MockVenueStats, ScopeStats, StreamStats, VenueStats } from './stats.js';
export {
  candleAt,
  candleValuesAt,
  canonicalSymbol,
  formatDecimal,
  gridCandles,
  isHole,
  priceAt,
  priceDecimals,
  type CandleValues,
  type ExpectedCandlesOptions,
} from './data/candles.js';
export { expectedCandles } from './expected-candles.js';
export { polygonBarTimes, polygonBarValues, polygonFinalBars, type PolygonBarValues } from './venues/polygon-emulation-bars.js';
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
export { type BookRequestRecord } from './venues/polymarket-emulation.js';
export { type ServedBook } from './venues/served-books.js';
export { DEFAULT_COINBASE_PRODUCTS } from './venues/coinbase-emulation.js';
export { KRAKEN_PAIRS } from './data/kraken-pairs.js';
export { POLYMARKET_BOOKS_LIMIT, POLYMARKET_MAX_BOOKS_PER_REQUEST } from './scenario.js';
export { DEFAULT_POLYMARKET_MARKETS, marketTokenIds, polymarketMarkets, type PolymarketMarket } from './data/markets.js';
export { DEFAULT_LIMITLESS_MARKETS, limitlessBookSlugs, limitlessMarkets, type LimitlessMarket } from './venues/limitless-markets.js';
export { LIMITLESS_PAGE_LIMIT, rawSize as limitlessRawSize } from './venues/limitless-emulation.js';
export { binanceInstrument, DEFAULT_BINANCE_SYMBOLS, type BinanceInstrument } from './data/symbols.js';
export { depthWeight } from './venues/binance-emulation.js';
export { coinbaseModel } from './venues/coinbase-emulation.js';
export { binanceBookAtUpdateId, binanceModel, binanceUpdateId } from './venues/binance-ws-market.js';
export { krakenChecksum, type KrakenLevelText } from './venues/kraken-checksum.js';
export { DEFAULT_KRAKEN_SYMBOLS, KRAKEN_BOOK_DEPTHS, KRAKEN_QTY_DECIMALS, krakenModel, krakenPricePrecision } from './venues/kraken-ws-emulation.js';
export { lastClosedTick, STREAM_TICK_MS, StreamBookModel, type ModelAggregate, type ModelTrade, type TickLevel } from './venues/stream-book-model.js';
export { ALPACA_EXTENDED_MINUTE_SHARE, alpacaBarTimes } from './venues/alpaca-emulation.js';
export { XETRA_LISTING_MS } from './venues/xetra-emulation.js';
export { FINNHUB_BURST_PER_SECOND } from './venues/finnhub-emulation.js';
export { FINNHUB_EXPIRATIONS, FINNHUB_QUOTE_PERIOD_MS, FINNHUB_STRIKES, finnhubOptionChain } from './venues/finnhub-options.js';
export { FRED_UNREGISTERED_KEY_PREFIX } from './venues/fred-emulation.js';
export { observationDates as fredObservationDates } from './venues/fred-series.js';
export { isBondMarketHoliday } from './venues/fred-calendar.js';
