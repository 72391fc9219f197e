import { z } from 'zod';
import { LOG_LEVELS, parseDurationMs, REDIS_PREFIX_EXPECTED, REDIS_PREFIX_PATTERN, REDIS_URL_EXPECTED, REDIS_URL_PATTERN } from '@tickfleet/core';

/*
 * Field types of environment variables. Each takes the variable's text (empty values never reach
 * them: parseConfig treats them as unset) and reports a failure with what was expected, which
 * ConfigError prints after "expected".
 */

/** Any non-empty text (a URL checked by whoever opens it, a directory, a host, a key). */
export function text() {
  return z.string({ error: 'a value' });
}

/** Text matching `pattern`; a mismatch names what was expected and echoes the value. */
export function matching(pattern: RegExp, expected: string) {
  return z.string({ error: expected }).regex(pattern, { error: (issue) => `${expected}, got ${JSON.stringify(issue.input)}` });
}

/** One of a fixed list of words. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  const expected = `one of ${values.join(', ')}`;
  return z.enum(values, { error: (issue) => (issue.input === undefined ? expected : `${expected}, got ${JSON.stringify(issue.input)}`) });
}

/** A whole number from `min` to `max` written in decimal digits (no sign, exponent or fraction). */
export function integer(min: number, max: number, expected: string) {
  return z.string({ error: expected }).transform((value, ctx) => {
    const n = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: 'custom', message: expected, input: value });
      return z.NEVER;
    }
    return n;
  });
}

export function positiveInt() {
  return integer(1, Number.MAX_SAFE_INTEGER, 'a positive integer');
}

export function port() {
  return integer(0, 65535, 'a TCP port 0-65535');
}

/**
 * A duration in milliseconds: a plain number of milliseconds (`1500`) or a number with a unit
 * (`500ms`, `2s`, `1m`, `1h`, `1d`). Positive unless `allowZero`.
 */
export function duration(options: { allowZero?: boolean } = {}) {
  const expected = options.allowZero ? 'a duration of 0 or more such as 0, 500ms, 2s, 1m or 1h' : 'a positive duration such as 1500, 500ms, 2s, 1m or 1h';
  return z.string({ error: expected }).transform((value, ctx) => {
    const ms = parseDurationMs(value);
    if (ms === undefined || ms < 0 || (ms === 0 && !options.allowZero)) {
      ctx.addIssue({ code: 'custom', message: expected, input: value });
      return z.NEVER;
    }
    return ms;
  });
}

/** 1/0, true/false or yes/no, as a boolean. */
export function flag() {
  const expected = 'one of 1/0, true/false, yes/no';
  return z
    .enum(['0', '1', 'true', 'false', 'yes', 'no'], { error: (issue) => `${expected}, got ${JSON.stringify(issue.input)}` })
    .transform((v) => v === '1' || v === 'true' || v === 'yes');
}

/** `redis://host:port`, `rediss://…` or the Cluster form `redis+cluster://host1:port1,host2:port2`. */
export function redisUrl() {
  return matching(REDIS_URL_PATTERN, REDIS_URL_EXPECTED);
}

/** A Redis key prefix (no braces: they would break Cluster hash tags). */
export function redisPrefix() {
  return matching(REDIS_PREFIX_PATTERN, REDIS_PREFIX_EXPECTED);
}

/** One of pino's levels. */
export function logLevel() {
  return oneOf(LOG_LEVELS);
}
