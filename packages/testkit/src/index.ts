// Light fixtures only: the fleet harness (which loads the store, the sinks and the venue
// emulations) is the separate entry `@tickfleet/testkit/fleet`, so a package's unit tests that
// need a Redis or a free port do not load the whole fleet.
export * from './redis-server.js';
export { freePort } from '@tickfleet/queues';
export * from './temp-dir.js';
export * from './repo-root.js';
export * from './cli.js';
export * from './wait-for.js';
export * from './child-process.js';
export * from './redis-cluster.js';
export * from './testkit-error.js';
export * from './chromium.js';
export * from './manual-clock.js';
export * from './candle-report.js';
