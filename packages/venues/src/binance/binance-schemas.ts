import { z } from 'zod';
import { DECIMAL_RE } from '../internal/parse-payload.js';

const Decimal = z.string().regex(DECIMAL_RE, 'expected a decimal string');
const EpochMs = z.number().int().nonnegative();

/**
 * One kline row: `[openTime, open, high, low, close, volume, closeTime, quoteAssetVolume,
 * numberOfTrades, takerBuyBaseVolume, takerBuyQuoteVolume, ignore]`. Extra trailing fields are tolerated
 * so a venue-side addition does not stop collection.
 */
export const BinanceKline = z
  .tuple([EpochMs, Decimal, Decimal, Decimal, Decimal, Decimal, EpochMs, Decimal, z.number().int().nonnegative(), Decimal, Decimal])
  .rest(z.unknown());
export type BinanceKline = z.infer<typeof BinanceKline>;

export const BinanceKlines = z.array(BinanceKline);
export type BinanceKlines = z.infer<typeof BinanceKlines>;

export const BinanceDepth = z.looseObject({
  lastUpdateId: z.number().int().nonnegative(),
  bids: z.array(z.tuple([Decimal, Decimal])),
  asks: z.array(z.tuple([Decimal, Decimal])),
});
export type BinanceDepth = z.infer<typeof BinanceDepth>;

export const BinanceSymbolInfo = z.looseObject({
  symbol: z.string().min(1),
  status: z.string(),
  baseAsset: z.string().min(1),
  quoteAsset: z.string().min(1),
});
export type BinanceSymbolInfo = z.infer<typeof BinanceSymbolInfo>;

export const BinanceExchangeInfo = z.looseObject({
  timezone: z.string().optional(),
  serverTime: z.number().int().optional(),
  rateLimits: z.array(z.looseObject({ rateLimitType: z.string(), interval: z.string(), intervalNum: z.number().int(), limit: z.number().int() })).optional(),
  symbols: z.array(BinanceSymbolInfo),
});
export type BinanceExchangeInfo = z.infer<typeof BinanceExchangeInfo>;
