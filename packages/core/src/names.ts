import { z } from 'zod';

/** A venue name: lowercase, starts with a letter, e.g. `binance`, `xetra`, `polymarket`. */
export const VenueName = z.string().regex(/^[a-z][a-z0-9_-]{1,31}$/, 'expected a venue name: 2-32 of [a-z0-9_-], starting with a letter (e.g. binance)');
export type VenueName = z.infer<typeof VenueName>;

/**
 * A symbol in tickfleet form: `BTC/USDT` for pairs, a bare ticker (`AAPL`), an ISIN, or a venue token id.
 * `:` is reserved as the job-id separator. Each `/`-separated part starts with a letter or digit,
 * so a symbol can never read as a path (`../../etc/passwd`, `/x`, `a//b`) once it reaches a
 * sink file name, a URL or a log.
 */
export const SymbolName = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/,
    'expected a symbol such as BTC/USDT or AAPL (letters, digits, . _ - and / between parts, each part starting with a letter or digit)',
  );
export type SymbolName = z.infer<typeof SymbolName>;

export const JOB_TYPES = ['ohlcv', 'book', 'trades', 'files', 'discovery', 'options', 'series'] as const;
/**
 * What a job collects: candles, order-book snapshots, trades, daily files, instrument discovery,
 * option-chain snapshots, or economic-series observations (FRED: a series id, or `treasury-curve`
 * for every constant-maturity tenor).
 */
export const JobType = z.enum(JOB_TYPES, {
  error: (issue) => `expected a job type (one of ${JOB_TYPES.join(', ')}), got ${JSON.stringify(issue.input)}`,
});
export type JobType = z.infer<typeof JobType>;

/**
 * Job types whose job may name a universe (`@<name>`) instead of one symbol: their units resolve
 * the universe's current members when they run. Every other type collects one symbol per job.
 */
export const UNIVERSE_JOB_TYPES: readonly JobType[] = ['options'];
