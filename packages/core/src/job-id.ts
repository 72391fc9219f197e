import { ValidationError } from './errors/validation-error.js';
import { JobType, VenueName } from './names.js';
import { Timeframe } from './timeframe.js';
import { JobSymbol } from './universe.js';

export interface JobKey {
  venue: string;
  type: JobType;
  symbol: string;
  timeframe?: Timeframe | undefined;
}

/**
 * The id of a job: `venue:symbol:timeframe:type`, e.g. `binance:BTC/USDT:1m:ohlcv`.
 * Jobs without a timeframe (book polling, files) use `-` in its place: `polymarket:123:-:book`;
 * a job over a universe has `@<name>` as its symbol.
 */
export function jobId(key: JobKey): string {
  return `${key.venue}:${key.symbol}:${key.timeframe ?? '-'}:${key.type}`;
}

/** Parses a job id, throwing a ValidationError naming `jobId` when it is not of the form above. */
export function parseJobId(id: string): Required<Omit<JobKey, 'timeframe'>> & { timeframe: Timeframe | undefined } {
  const parts = id.split(':');
  const expected = 'a job id venue:symbol:timeframe:type, e.g. binance:BTC/USDT:1m:ohlcv';
  if (parts.length !== 4) throw new ValidationError('jobId', expected, id);
  const [venue, symbol, tf, type] = parts as [string, string, string, string];
  if (!VenueName.safeParse(venue).success || !JobSymbol.safeParse(symbol).success || !JobType.safeParse(type).success) {
    throw new ValidationError('jobId', expected, id);
  }
  if (tf !== '-' && !Timeframe.safeParse(tf).success) throw new ValidationError('jobId', expected, id);
  return { venue, symbol, type: type as JobType, timeframe: tf === '-' ? undefined : (tf as Timeframe) };
}
