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

const isCount = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;
const isDecimal = (v: unknown): boolean => typeof v === 'string' && DECIMAL_RE.test(v);

/**
 * Exactly the constraints of {@link BinanceKlines}, checked without zod's per-element machinery:
 * a page is 1,000 rows of 11 checked fields, and zod spent about a tenth of a worker's CPU per unit
 * on it. `parsePayload` runs the schema itself only when this says no, for its error message
 * (`binance-schemas.test.ts` holds the two to the same verdicts).
 */
export function isBinanceKlines(value: unknown): value is BinanceKlines {
  if (!Array.isArray(value)) return false;
  for (const row of value as unknown[]) {
    if (!Array.isArray(row) || row.length < 11) return false;
    if (!isCount(row[0]) || !isCount(row[6]) || !isCount(row[8])) return false;
    // The decimal fields, written out: a loop over their positions cost a fifth more.
    if (!isDecimal(row[1]) || !isDecimal(row[2]) || !isDecimal(row[3]) || !isDecimal(row[4]) || !isDecimal(row[5])) return false;
    if (!isDecimal(row[7]) || !isDecimal(row[9]) || !isDecimal(row[10])) return false;
  }
  return true;
}

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

/** `GET /api/v3/aggTrades` rows: `a` the aggregate id, `f`..`l` the trade ids it fills, `T` its time. */
export const BinanceAggTrades = z.array(
  z.looseObject({
    a: z.number().int().nonnegative(),
    p: Decimal,
    q: Decimal,
    f: z.number().int().nonnegative(),
    l: z.number().int().nonnegative(),
    T: EpochMs,
  }),
);

/** `GET /api/v3/historicalTrades` rows: one fill each, ids contiguous per symbol. */
export const BinanceHistoricalTrades = z.array(
  z.looseObject({ id: z.number().int().nonnegative(), price: Decimal, qty: Decimal, time: EpochMs, isBuyerMaker: z.boolean() }),
);

/** One `GET /api/v3/ticker/bookTicker` entry: the best bid and ask with their quantities (`"0.00000000"` on an empty side). */
export const BinanceBookTicker = z.looseObject({ symbol: z.string().min(1), bidPrice: Decimal, bidQty: Decimal, askPrice: Decimal, askQty: Decimal });
export type BinanceBookTicker = z.infer<typeof BinanceBookTicker>;
export const BinanceBookTickers = z.array(BinanceBookTicker);
