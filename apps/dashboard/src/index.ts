export {
  collectFleetStatus,
  type FleetStatus,
  type FleetStatusSources,
  type SpoolDepth,
  type VenueBudgetStatus,
  type VenueCursorLag,
  type VenueFreezeStatus,
  type VenueLeases,
  type VenueStatus,
} from './fleet-status.js';
export type { StreamGapEntry, StreamStatus, StreamStatusSource } from './stream-status.js';
export type { BookLoopHolder, BookLoopStatus } from './book-loop-status.js';
export { FleetStatusMetrics } from './fleet-status-metrics.js';
export { StatusCache } from './status-cache.js';
export { QueueBoard, type QueueBoardOptions } from './queue-board.js';
export { DashboardServer, type DashboardServerOptions } from './dashboard-server.js';
export { DashboardEnv } from './dashboard-env.js';
export { DASHBOARD_DEFAULTS } from './dashboard-defaults.js';
export { runDashboard, type RunDashboardOptions, type RunningDashboard } from './run-dashboard.js';
export type { DashboardCredentials } from './internal/dashboard-auth.js';
