import { z } from 'zod';

const Num = z.number().finite();

/** One aggregate bar: `t` is the window start (epoch ms); prices and volume are JSON numbers. */
export const PolygonBar = z.looseObject({
  o: Num,
  h: Num,
  l: Num,
  c: Num,
  v: Num,
  vw: Num.optional(),
  t: z.number().int(),
  n: z.number().int().nonnegative().optional(),
});
export type PolygonBar = z.infer<typeof PolygonBar>;

/**
 * `GET /v2/aggs/ticker/{ticker}/range/{multiplier}/{timespan}/{from}/{to}`. `results` is absent when a
 * range holds no bars; `next_url` only when more results exist. `status` is `OK`, or `DELAYED` for
 * plans with delayed data.
 */
export const PolygonAggs = z.looseObject({
  ticker: z.string().optional(),
  queryCount: z.number().int().optional(),
  resultsCount: z.number().int().optional(),
  adjusted: z.boolean().optional(),
  results: z.array(PolygonBar).optional(),
  status: z.enum(['OK', 'DELAYED']),
  request_id: z.string().optional(),
  count: z.number().int().optional(),
  next_url: z.string().optional(),
});
export type PolygonAggs = z.infer<typeof PolygonAggs>;
