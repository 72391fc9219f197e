/**
 * Shared checks for operator input (CLI arguments and role environment), so every command and
 * role refuses the same things with the same words.
 */

/**
 * Earliest instant tickfleet accepts as a date argument. No venue it serves publishes history
 * before 1990, and anything older is almost always a typo (`1900-01-01`) that would plan
 * decades of empty pages.
 */
export const EARLIEST_DATE_MS = Date.UTC(1990, 0, 1);

/** What a date argument must look like, for error messages. */
export const ISO_DATE_EXPECTED = 'an ISO date such as 2024-01-01 or 2024-01-01T12:00:00Z, from 1990-01-01';

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses an ISO-8601 date or date-time (UTC when no zone is given) to epoch ms, or returns
 * undefined. Unlike `Date.parse` it refuses dates that do not exist (`2024-02-30` would roll
 * over to March 1) and hours/minutes/seconds out of range, and anything before {@link EARLIEST_DATE_MS}
 * or after year 9999.
 */
export function parseIsoInstant(text: string): number | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) =>
    v === undefined ? undefined : Number(v),
  ) as number[];
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0'));
  if (month! < 1 || month! > 12 || day! < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const local = Date.UTC(year!, month! - 1, day!, hour, minute, second, millis);
  const check = new Date(local);
  // Date.UTC normalises overflow (Feb 30 -> Mar 1); a real date survives the round trip.
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month! - 1 || check.getUTCDate() !== day) return undefined;
  let offsetMs = 0;
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
    if (!z || Number(z[2]) > 23 || Number(z[3]) > 59) return undefined;
    offsetMs = (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3])) * 60_000;
  }
  const ms = local - offsetMs;
  if (ms < EARLIEST_DATE_MS || year! > 9999) return undefined;
  return ms;
}

/** `redis://host:port`, `rediss://…` or `redis+cluster://host1:port1,host2:port2,…`. */
export const REDIS_URL_PATTERN = /^rediss?(\+cluster)?:\/\/\S+$/;
export const REDIS_URL_EXPECTED = 'a redis://, rediss:// or redis+cluster://host:port,… URL';

/** A Redis key prefix of one fleet: no braces (they would break Cluster hash tags), no spaces. */
export const REDIS_PREFIX_PATTERN = /^[A-Za-z0-9_.-]+$/;
export const REDIS_PREFIX_EXPECTED = 'a Redis key prefix of [A-Za-z0-9_.-]';
/** The key prefix of a fleet that names none (`TICKFLEET_PREFIX`); one constant for config and the libraries' defaults. */
export const DEFAULT_REDIS_PREFIX = 'tickfleet';

/** pino's levels, the only values `LOG_LEVEL` may take. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** The level of a process that names none (`LOG_LEVEL`); one constant for config and the logger's default. */
export const DEFAULT_LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

/**
 * Where a server listens unless told otherwise (the roles' health servers, the emulations): the
 * loopback address, so nothing is served to the network unless asked for, on a free port the
 * system picks. One object for config and the servers' defaults.
 */
export const LISTEN_DEFAULTS = Object.freeze({ host: '127.0.0.1', port: 0 });

/**
 * Most units one backfill may enqueue unless the operator raises it (`--max-units`): 10,000
 * page-sized units is about 19 years of 1m Binance candles, far beyond a typo-free request,
 * while a mistyped century (52,000+ units) would fill the queue for days.
 */
export const DEFAULT_MAX_BACKFILL_UNITS = 10_000;
/** Hard ceiling of `--max-units`. */
export const MAX_BACKFILL_UNITS_CEILING = 200_000;
