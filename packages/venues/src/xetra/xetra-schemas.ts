import { z } from 'zod';

/** `GET /{VENUE}-posttrade`: the files currently published for that venue. */
export const XetraFileList = z.looseObject({
  SourcePrefix: z.string().optional(),
  CurrentFiles: z.array(z.string()),
});
export type XetraFileList = z.infer<typeof XetraFileList>;

const NumOrDecimal = z.union([z.number().finite(), z.string().regex(/^-?\d+(\.\d+)?$/)]);

/**
 * One post-trade record of a Deutsche Börse file, with the documented MiFIR/MMT names: `isin`,
 * `lastTrade` (price), `lastQty`, `lastTradeTime` (ISO with ns), `transIdCode` (unique transaction id),
 * `tickId`, `mmt*` flags, `executionVenueId`, …. Unknown fields are kept.
 */
export const XetraTradeRecord = z.looseObject({
  messageId: z.string().optional(),
  sourceName: z.string().optional(),
  isin: z.string().regex(/^[A-Z]{2}[A-Z0-9]{9}\d$/, 'expected an ISIN'),
  currency: z.string().optional(),
  lastTrade: NumOrDecimal,
  lastQty: NumOrDecimal,
  lastTradeTime: z.string(),
  distributionDateTime: z.string().optional(),
  transIdCode: z.string().optional(),
  tradeId: z.union([z.string(), z.number()]).optional(),
  tickId: z.number().int().optional(),
  mmtMarketMechanism: z.string().optional(),
  mmtTradingMode: z.string().optional(),
  executionVenueId: z.string().optional(),
});
export type XetraTradeRecord = z.infer<typeof XetraTradeRecord>;
