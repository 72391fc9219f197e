import { z } from 'zod';
import { DECIMAL_RE } from '../internal/parse-payload.js';

const Decimal = z.string().regex(DECIMAL_RE, 'expected a decimal string');

/**
 * A Gamma `GET /markets` entry. `clobTokenIds` and `outcomes` are JSON-encoded string arrays
 * (`"[\"123\", \"456\"]"`), not arrays; both are decoded by the adapter.
 */
export const PolymarketMarket = z.looseObject({
  id: z.union([z.string(), z.number()]),
  question: z.string().nullish(),
  conditionId: z.string().nullish(),
  slug: z.string().nullish(),
  /** ISO 8601 end of the market (`2025-12-31T12:00:00Z`); the instrument is retired after it. */
  endDate: z.string().nullish(),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  clobTokenIds: z.string().nullish(),
  outcomes: z.string().nullish(),
  enableOrderBook: z.boolean().nullish(),
});
export type PolymarketMarket = z.infer<typeof PolymarketMarket>;

export const PolymarketMarkets = z.array(PolymarketMarket);

/** The decoded `clobTokenIds`: token ids are long decimal strings. */
export const PolymarketTokenIds = z.array(z.string().regex(/^\d+$/, 'expected a token id of digits'));
export const PolymarketOutcomes = z.array(z.string());

export const PolymarketLevel = z.looseObject({ price: Decimal, size: Decimal });

/** CLOB `GET /book?token_id=`. `timestamp` is epoch ms as a string. */
export const PolymarketBook = z.looseObject({
  market: z.string(),
  asset_id: z.string(),
  timestamp: z.union([z.string(), z.number()]),
  hash: z.string().optional(),
  bids: z.array(PolymarketLevel),
  asks: z.array(PolymarketLevel),
  min_order_size: z.string().optional(),
  tick_size: z.string().optional(),
  neg_risk: z.boolean().optional(),
});
export type PolymarketBook = z.infer<typeof PolymarketBook>;
