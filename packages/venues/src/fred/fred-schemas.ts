import { z } from 'zod';

const IsoDay = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

/** One row of `observations`: the value is a decimal string, or `"."` where FRED has none. */
export const FredObservation = z.looseObject({
  realtime_start: IsoDay,
  realtime_end: IsoDay,
  date: IsoDay,
  value: z.union([z.literal('.'), z.string().regex(/^-?\d+(\.\d+)?$/)]),
});
export type FredObservation = z.infer<typeof FredObservation>;

/**
 * `GET /fred/series/observations?file_type=json` (https://fred.stlouisfed.org/docs/api/fred/series_observations.html):
 * the request's real-time and observation periods, the units key (`lin`), paging (`count`
 * observations in all, this page from `offset`, at most `limit`), and the rows.
 */
export const FredObservations = z.looseObject({
  realtime_start: IsoDay,
  realtime_end: IsoDay,
  observation_start: IsoDay,
  observation_end: IsoDay,
  units: z.string().min(1),
  output_type: z.number().int(),
  file_type: z.literal('json'),
  order_by: z.string(),
  sort_order: z.enum(['asc', 'desc']),
  count: z.number().int().nonnegative(),
  offset: z.number().int().nonnegative(),
  limit: z.number().int().positive(),
  observations: z.array(FredObservation),
});
export type FredObservations = z.infer<typeof FredObservations>;
