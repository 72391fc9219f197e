import { z } from 'zod';
import { DECIMAL_RE } from '../internal/parse-payload.js';

/** Prices and sizes arrive as JSON numbers (the official SDK types them `number`); a decimal string is accepted too. */
const Num = z.union([z.number().finite().nonnegative(), z.string().regex(DECIMAL_RE, 'expected a decimal')]);

/** `tokens` of a CLOB market: the YES and NO outcome token ids (long decimal strings). */
export const LimitlessTokens = z.looseObject({
  yes: z.string().regex(/^\d+$/, 'expected a token id of digits'),
  no: z.string().regex(/^\d+$/, 'expected a token id of digits'),
});

const marketFields = {
  id: z.union([z.number().int(), z.string()]),
  slug: z.string().min(1),
  title: z.string().nullish(),
  expirationDate: z.string().nullish(),
  expirationTimestamp: z.number().int().nullish(),
  expired: z.boolean().nullish(),
  status: z.string().nullish(),
  tradeType: z.string().nullish(),
  marketType: z.string().nullish(),
  conditionId: z.string().nullish(),
  tokens: LimitlessTokens.nullish(),
};

/** A child market of a `group` market: the same fields, one level deep. */
export const LimitlessChildMarket = z.looseObject(marketFields);
export type LimitlessChildMarket = z.infer<typeof LimitlessChildMarket>;

/**
 * One market of `GET /markets/active`, as the official TypeScript SDK (`@limitless-exchange/sdk`,
 * `types/markets.ts`) declares it. A `group` market (NegRisk) carries its tradable child markets in
 * `markets`, each with its own slug and order book; an `amm` market has no order book.
 */
export const LimitlessMarket = z.looseObject({ ...marketFields, markets: z.array(LimitlessChildMarket).nullish() });
export type LimitlessMarket = z.infer<typeof LimitlessMarket>;

/** `GET /markets/active?page=&limit=`: one page of markets and the total across pages. */
export const LimitlessActiveMarkets = z.looseObject({
  data: z.array(LimitlessMarket),
  totalMarketsCount: z.number().int().nonnegative(),
});

export const LimitlessLevel = z.looseObject({ price: Num, size: Num, side: z.string().optional() });

/**
 * `GET /markets/{slug}/orderbook`: the YES token's book, bids best (highest) first and asks best
 * (lowest) first. It carries no timestamp; the adapter stamps it with the receive time.
 */
export const LimitlessOrderbook = z.looseObject({
  bids: z.array(LimitlessLevel),
  asks: z.array(LimitlessLevel),
  tokenId: z.string(),
  adjustedMidpoint: Num.nullish(),
  maxSpread: Num.nullish(),
  minSize: Num.nullish(),
  lastTradePrice: Num.nullish(),
});
export type LimitlessOrderbook = z.infer<typeof LimitlessOrderbook>;
