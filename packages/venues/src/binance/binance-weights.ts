/** Binance `GET /api/v3/depth` weight by `limit` (spot REST docs: 1-100 -> 5, 101-500 -> 25, 501-1000 -> 50, 1001-5000 -> 250). */
export function binanceDepthWeight(limit: number): number {
  if (limit <= 100) return 5;
  if (limit <= 500) return 25;
  if (limit <= 1000) return 50;
  return 250;
}

/** Request weight of each Binance endpoint tickfleet calls (`depth` depends on the configured limit). */
export function binanceWeights(depthLimit: number): Readonly<Record<BinanceEndpoint, number>> {
  return Object.freeze({ klines: 2, depth: binanceDepthWeight(depthLimit), exchangeInfo: 20, aggTrades: 4, historicalTrades: 25 });
}

/** The Binance endpoints tickfleet calls. */
export type BinanceEndpoint = 'klines' | 'depth' | 'exchangeInfo' | 'aggTrades' | 'historicalTrades';
