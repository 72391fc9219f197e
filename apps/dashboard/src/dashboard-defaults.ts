import { DEFAULTS } from '@tickfleet/config';
import { LISTEN_DEFAULTS } from '@tickfleet/core';

/**
 * Defaults of the dashboard's settings, each written once: DashboardEnv's variables,
 * DashboardServer's and QueueBoard's options take them from here.
 */
export const DASHBOARD_DEFAULTS = {
  /** Where the dashboard process listens (TICKFLEET_DASHBOARD_PORT). */
  port: DEFAULTS.dashboardPort,
  /** A DashboardServer given no port (tests, `tickfleet up` with `--dashboard-port 0`) takes a free one. */
  serverPort: LISTEN_DEFAULTS.port,
  host: DEFAULTS.listenHost,
  /** Read-only: job actions need `allowActions` and credentials. */
  allowActions: false,
  /** Where bull-board is mounted. */
  queuesPath: '/queues',
  /** How often connectors are re-read for new venues. */
  discoverMs: 5000,
  /** How often the overview page polls `api/status`. */
  refreshMs: 2000,
  /** How long a status snapshot is reused across requests and scrapes. */
  statusMaxAgeMs: 500,
  /** How often the history behind the overview's charts samples each venue. */
  historyIntervalMs: 5000,
} as const;
