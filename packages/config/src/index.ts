export { parseConfig, envWith, type Env } from './parse-config.js';
export { DEFAULTS, SHARED } from './shared.js';
export { duration, flag, integer, logLevel, matching, oneOf, port, positiveInt, redisPrefix, redisUrl, text } from './fields.js';
