import { z } from 'zod';
import { duration, flag, port, SHARED, text } from '@tickfleet/config';
import { DASHBOARD_DEFAULTS } from './dashboard-defaults.js';

/** The dashboard's configuration, parsed once at start with parseConfig; a bad value names its variable. Defaults: {@link DASHBOARD_DEFAULTS}. */
export const DashboardEnv = z.object({
  REDIS_URL: SHARED.REDIS_URL,
  TICKFLEET_STORE_URL: SHARED.TICKFLEET_STORE_URL,
  TICKFLEET_BUDGET_URL: SHARED.TICKFLEET_BUDGET_URL,
  TICKFLEET_PREFIX: SHARED.TICKFLEET_PREFIX,
  /** 0 picks a free port. */
  TICKFLEET_DASHBOARD_PORT: port().default(DASHBOARD_DEFAULTS.port),
  /** Loopback by default; 0.0.0.0 in a container. */
  TICKFLEET_DASHBOARD_HOST: text().default(DASHBOARD_DEFAULTS.host),
  /** Enables bull-board job actions; needs a token or user + password. */
  TICKFLEET_DASHBOARD_ALLOW_ACTIONS: flag().default(DASHBOARD_DEFAULTS.allowActions),
  TICKFLEET_DASHBOARD_TOKEN: text().optional(),
  TICKFLEET_DASHBOARD_USER: text().optional(),
  TICKFLEET_DASHBOARD_PASSWORD: text().optional(),
  /** Spool base directory of this machine's workers, for the spool-depth figure. */
  TICKFLEET_SPOOL_DIR: SHARED.TICKFLEET_SPOOL_DIR,
  /** How often connectors are re-read for new venue queues. */
  TICKFLEET_DASHBOARD_DISCOVER_MS: duration().default(DASHBOARD_DEFAULTS.discoverMs),
  LOG_LEVEL: SHARED.LOG_LEVEL,
});
export type DashboardEnv = z.infer<typeof DashboardEnv>;
