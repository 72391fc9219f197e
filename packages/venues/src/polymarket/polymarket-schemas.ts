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

/** The CLOB `POST /books` answer: the books it has, in the order asked. */
export const PolymarketBooks = z.array(PolymarketBook);
export type PolymarketBooks = z.infer<typeof PolymarketBooks>;

const isDecimal = (v: unknown): boolean => typeof v === 'string' && DECIMAL_RE.test(v);
const isOptional = (v: unknown, type: 'string' | 'boolean'): boolean => v === undefined || typeof v === type;

function isLevels(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const l of value as unknown[]) {
    if (typeof l !== 'object' || l === null || Array.isArray(l)) return false;
    if (!isDecimal((l as { price?: unknown }).price) || !isDecimal((l as { size?: unknown }).size)) return false;
  }
  return true;
}

/**
 * Exactly the constraints of {@link PolymarketBooks}, checked without zod's per-element machinery
 * (which also copies every object): a batch is 500 books of about 40 levels, and zod took about a
 * sixth of the book loop's CPU per book. `parsePayload` runs the schema only when this says no,
 * for its error message (`polymarket-schemas.test.ts` holds the two to the same verdicts).
 */
export function isPolymarketBooks(value: unknown): value is PolymarketBooks {
  if (!Array.isArray(value)) return false;
  for (const b of value as unknown[]) {
    if (typeof b !== 'object' || b === null || Array.isArray(b)) return false;
    const book = b as Record<string, unknown>;
    if (typeof book.market !== 'string' || typeof book.asset_id !== 'string') return false;
    if (typeof book.timestamp !== 'string' && !Number.isFinite(book.timestamp)) return false;
    if (!isOptional(book.hash, 'string') || !isOptional(book.min_order_size, 'string') || !isOptional(book.tick_size, 'string')) return false;
    if (!isOptional(book.neg_risk, 'boolean') || !isLevels(book.bids) || !isLevels(book.asks)) return false;
  }
  return true;
}
