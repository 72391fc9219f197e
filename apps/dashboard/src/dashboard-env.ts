import { z } from 'zod';
import { REDIS_PREFIX_EXPECTED, REDIS_PREFIX_PATTERN, REDIS_URL_EXPECTED, REDIS_URL_PATTERN } from '@tickfleet/core';

const flag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', ''], { error: 'expected 1/0, true/false or yes/no' })
  .default('0')
  .transform((v) => v === '1' || v === 'true' || v === 'yes');
const nonEmpty = z.string().min(1, 'expected a non-empty value').optional();

/** The dashboard's configuration, parsed once at start (`parseEnv`); a bad value names its variable. */
export const DashboardEnv = z.object({
  REDIS_URL: z.string().regex(REDIS_URL_PATTERN, REDIS_URL_EXPECTED),
  TICKFLEET_STORE_URL: z.string().default('sqlite://.tickfleet/state.db'),
  TICKFLEET_PREFIX: z.string().regex(REDIS_PREFIX_PATTERN, REDIS_PREFIX_EXPECTED).default('tickfleet'),
  /** 0 picks a free port. */
  TICKFLEET_DASHBOARD_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Loopback by default; 0.0.0.0 in a container. */
  TICKFLEET_DASHBOARD_HOST: z.string().min(1).default('127.0.0.1'),
  /** Enables bull-board job actions; needs a token or user + password. */
  TICKFLEET_DASHBOARD_ALLOW_ACTIONS: flag,
  TICKFLEET_DASHBOARD_TOKEN: nonEmpty,
  TICKFLEET_DASHBOARD_USER: nonEmpty,
  TICKFLEET_DASHBOARD_PASSWORD: nonEmpty,
  /** Spool base directory of this machine's workers, for the spool-depth figure. */
  TICKFLEET_SPOOL_DIR: z.string().default('.tickfleet/spool'),
  /** How often connectors are re-read for new venue queues. */
  TICKFLEET_DASHBOARD_DISCOVER_MS: z.coerce.number().int().positive().default(5000),
});
export type DashboardEnv = z.infer<typeof DashboardEnv>;
