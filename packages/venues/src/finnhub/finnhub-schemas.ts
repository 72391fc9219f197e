import { z } from 'zod';

const Num = z.number().finite();
/** Finnhub sends numbers, and null or omits a field where it has no value (greeks of illiquid contracts). */
const OptNum = Num.nullish();

/**
 * One contract of `GET /api/v1/stock/option-chain` (`data[].options.CALL[]` / `.PUT[]`), as the
 * documentation's example shows it: `contractName` (OCC symbol), `type` `CALL`/`PUT`,
 * `expirationDate` `YYYY-MM-DD`, `strike`, `lastPrice`, `bid`, `ask`, `volume`, `openInterest`,
 * `impliedVolatility` (percent), the greeks, and `updatedAt` (`YYYY-MM-DD HH:mm:ss`, exchange time).
 */
export const FinnhubOptionContract = z.looseObject({
  contractName: z.string().min(1),
  type: z.enum(['CALL', 'PUT']),
  expirationDate: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  strike: Num,
  lastPrice: OptNum,
  bid: OptNum,
  ask: OptNum,
  volume: OptNum,
  openInterest: OptNum,
  impliedVolatility: OptNum,
  delta: OptNum,
  gamma: OptNum,
  theta: OptNum,
  vega: OptNum,
  rho: OptNum,
  updatedAt: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    .nullish(),
});
export type FinnhubOptionContract = z.infer<typeof FinnhubOptionContract>;

/** One expiration of the chain with its aggregates and contract lists. */
export const FinnhubExpiration = z.looseObject({
  expirationDate: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  options: z.looseObject({
    CALL: z.array(FinnhubOptionContract).optional(),
    PUT: z.array(FinnhubOptionContract).optional(),
  }),
});

/**
 * `GET /api/v1/stock/option-chain?symbol=`: the underlier (`code`), its exchange and last trade,
 * and `data`, one entry per expiration. A symbol without listed options answers without `data`
 * (or with an empty one).
 */
export const FinnhubOptionChain = z.looseObject({
  code: z.string().optional(),
  exchange: z.string().optional(),
  lastTradeDate: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .optional(),
  lastTradePrice: OptNum,
  data: z.array(FinnhubExpiration).optional(),
});
export type FinnhubOptionChain = z.infer<typeof FinnhubOptionChain>;
