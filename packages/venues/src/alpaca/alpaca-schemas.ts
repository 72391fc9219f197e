import { z } from 'zod';

const Num = z.number().finite();

/**
 * One bar of Alpaca Market Data v2 (`GET /v2/stocks/bars`): `t` is the bar's start as RFC-3339 UTC
 * (`2024-01-03T05:00:00Z` for a day bar: New York midnight), `v` the volume, `n` the trade count,
 * `vw` the volume-weighted average price. Every field is present in Alpaca's answers.
 */
export const AlpacaBar = z.looseObject({
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/, 'expected an RFC-3339 UTC time'),
  o: Num,
  h: Num,
  l: Num,
  c: Num,
  v: Num,
  n: z.number().int().nonnegative(),
  vw: Num,
});
export type AlpacaBar = z.infer<typeof AlpacaBar>;

/**
 * `GET /v2/stocks/bars`: bars keyed by symbol (a symbol without bars in the range is absent), sorted by
 * symbol, then time; `next_page_token` is null on the last page. `limit` counts bars over all symbols.
 */
export const AlpacaMultiBars = z.looseObject({
  bars: z.record(z.string(), z.array(AlpacaBar)).nullable(),
  next_page_token: z.string().nullable(),
  currency: z.string().optional(),
});
export type AlpacaMultiBars = z.infer<typeof AlpacaMultiBars>;
