import { z } from 'zod';
import { parseConfig, redisPrefix, SHARED } from '@tickfleet/config';

/**
 * The variables the CLI itself reads (roles it runs parse their own schema). REDIS_URL and
 * TICKFLEET_PREFIX have no default here: unset, the CLI finds them in the fleet file `tickfleet up`
 * writes (fleet-context.ts).
 */
const CliEnv = z.object({
  TICKFLEET_PREFIX: redisPrefix().optional(),
  REDIS_URL: SHARED.REDIS_URL.optional(),
  TICKFLEET_STORE_URL: SHARED.TICKFLEET_STORE_URL,
  TICKFLEET_BUDGET_URL: SHARED.TICKFLEET_BUDGET_URL,
  TICKFLEET_SINK_URL: SHARED.TICKFLEET_SINK_URL,
  TICKFLEET_SPOOL_DIR: SHARED.TICKFLEET_SPOOL_DIR,
  LOG_LEVEL: SHARED.LOG_LEVEL,
  POLYGON_API_KEY: SHARED.POLYGON_API_KEY,
  FINNHUB_API_KEY: SHARED.FINNHUB_API_KEY,
  FRED_API_KEY: SHARED.FRED_API_KEY,
  ALPACA_API_KEY_ID: SHARED.ALPACA_API_KEY_ID,
  ALPACA_API_SECRET_KEY: SHARED.ALPACA_API_SECRET_KEY,
  TICKFLEET_PARENT_PID: SHARED.TICKFLEET_PARENT_PID,
  TICKFLEET_REDIS_GIVE_UP_MS: SHARED.TICKFLEET_REDIS_GIVE_UP_MS,
});
export type CliEnv = z.infer<typeof CliEnv>;

/**
 * The named variables, parsed in the order given: a command fails on a bad variable it uses, not
 * on one it never reads (`tickfleet jobs list` runs whatever REDIS_URL holds).
 */
export function cliEnv<K extends keyof CliEnv>(...names: K[]): Pick<CliEnv, K> {
  const mask = Object.fromEntries(names.map((name) => [name, true])) as Partial<Record<keyof CliEnv, true>>;
  return parseConfig(CliEnv.pick(mask)) as Pick<CliEnv, K>;
}
