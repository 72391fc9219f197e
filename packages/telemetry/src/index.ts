export * from './logger.js';
export * from './metrics-registry.js';
export * from './health-server.js';
export * from './shutdown.js';
export * from './metrics-catalog.js';
