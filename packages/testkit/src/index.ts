export * from './redis-server.js';
export * from './free-port.js';
export * from './temp-dir.js';
export * from './repo-root.js';
export * from './cli.js';
export * from './wait-for.js';
export * from './redis-cluster.js';
