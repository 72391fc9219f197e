import { z } from 'zod';
import { ConfigError } from '@tickfleet/core';
import { DEFAULTS, duration, envWith, flag, parseConfig, port, positiveInt, SHARED } from './index.js';

/** A role-like schema: shared variables plus fields of its own. */
const Schema = z.object({
  REDIS_URL: SHARED.REDIS_URL,
  TICKFLEET_PREFIX: SHARED.TICKFLEET_PREFIX,
  TICKFLEET_STORE_URL: SHARED.TICKFLEET_STORE_URL,
  TICKFLEET_SINK_URL: SHARED.TICKFLEET_SINK_URL,
  TICKFLEET_SPOOL_DIR: SHARED.TICKFLEET_SPOOL_DIR,
  TICKFLEET_HEALTH_PORT: SHARED.TICKFLEET_HEALTH_PORT,
  TICKFLEET_HEALTH_HOST: SHARED.TICKFLEET_HEALTH_HOST,
  TICKFLEET_GRACE_MS: SHARED.TICKFLEET_GRACE_MS,
  LOG_LEVEL: SHARED.LOG_LEVEL,
  POLYGON_API_KEY: SHARED.POLYGON_API_KEY,
  X_TICK_MS: duration().default(1000),
  X_JITTER_MS: duration({ allowZero: true }).default(1000),
  X_BATCH: positiveInt().default(500),
  X_PORT: port().optional(),
  X_FLAG: flag().default(false),
});

const REDIS = { REDIS_URL: 'redis://127.0.0.1:6379' };

/** The ConfigError `fn` throws (fails the test if it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('parseConfig', () => {
  it('fills every unset variable with its default', () => {
    expect(parseConfig(Schema, REDIS)).toEqual({
      REDIS_URL: 'redis://127.0.0.1:6379',
      TICKFLEET_PREFIX: DEFAULTS.prefix,
      TICKFLEET_STORE_URL: 'sqlite://.tickfleet/state.db',
      TICKFLEET_SINK_URL: 'sqlite://.tickfleet/data.db',
      TICKFLEET_SPOOL_DIR: '.tickfleet/spool',
      TICKFLEET_HEALTH_PORT: 0,
      TICKFLEET_HEALTH_HOST: '127.0.0.1',
      TICKFLEET_GRACE_MS: 25_000,
      LOG_LEVEL: 'info',
      X_TICK_MS: 1000,
      X_JITTER_MS: 1000,
      X_BATCH: 500,
      X_FLAG: false,
    });
  });

  it('treats an empty variable as unset: the default, or absent when optional', () => {
    const config = parseConfig(Schema, { ...REDIS, TICKFLEET_PREFIX: '', TICKFLEET_GRACE_MS: '', LOG_LEVEL: '', POLYGON_API_KEY: '', X_PORT: '', X_FLAG: '' });
    expect(config).toMatchObject({ TICKFLEET_PREFIX: 'tickfleet', TICKFLEET_GRACE_MS: 25_000, LOG_LEVEL: 'info', X_FLAG: false });
    expect('POLYGON_API_KEY' in config).toBe(false);
    expect('X_PORT' in config).toBe(false);
  });

  it('says that an empty required variable must be set', () => {
    const err = configError(() => parseConfig(Schema, { REDIS_URL: '' }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe('invalid configuration REDIS_URL: expected REDIS_URL to be set (a redis://, rediss:// or redis+cluster://host:port,… URL)');
  });

  it.each([
    ['1500', 1500],
    ['500ms', 500],
    ['2s', 2000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['1h', 3_600_000],
    [' 30s ', 30_000],
  ])('reads the duration %j as %d ms', (text, ms) => {
    expect(parseConfig(Schema, { ...REDIS, X_TICK_MS: text, TICKFLEET_GRACE_MS: text }).X_TICK_MS).toBe(ms);
    expect(parseConfig(Schema, { ...REDIS, TICKFLEET_GRACE_MS: text }).TICKFLEET_GRACE_MS).toBe(ms);
  });

  it('accepts a zero duration only where zero is allowed', () => {
    expect(parseConfig(Schema, { ...REDIS, X_JITTER_MS: '0' }).X_JITTER_MS).toBe(0);
    expect(parseConfig(Schema, { ...REDIS, X_JITTER_MS: '0s' }).X_JITTER_MS).toBe(0);
    expect(configError(() => parseConfig(Schema, { ...REDIS, X_TICK_MS: '0' })).message).toBe(
      'invalid configuration X_TICK_MS: expected a positive duration such as 1500, 500ms, 2s, 1m or 1h',
    );
  });

  it('accepts every Redis URL form, the Cluster one included', () => {
    for (const url of ['redis://h:6379', 'rediss://user:pw@h:6380/2', 'redis+cluster://h1:7000,h2:7001']) {
      expect(parseConfig(Schema, { REDIS_URL: url }).REDIS_URL).toBe(url);
    }
  });

  it.each([
    [{ REDIS_URL: 'notaurl' }, 'REDIS_URL', 'a redis://, rediss:// or redis+cluster://host:port,… URL, got "notaurl"'],
    [{ TICKFLEET_PREFIX: 'bad{prefix}' }, 'TICKFLEET_PREFIX', 'a Redis key prefix of [A-Za-z0-9_.-], got "bad{prefix}"'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL', 'one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [{ TICKFLEET_GRACE_MS: 'soon' }, 'TICKFLEET_GRACE_MS', 'a positive duration such as 1500, 500ms, 2s, 1m or 1h'],
    [{ TICKFLEET_GRACE_MS: '-5s' }, 'TICKFLEET_GRACE_MS', 'a positive duration such as 1500, 500ms, 2s, 1m or 1h'],
    [{ X_JITTER_MS: '2 weeks' }, 'X_JITTER_MS', 'a duration of 0 or more such as 0, 500ms, 2s, 1m or 1h'],
    [{ TICKFLEET_HEALTH_PORT: '70000' }, 'TICKFLEET_HEALTH_PORT', 'a TCP port 0-65535'],
    [{ TICKFLEET_HEALTH_PORT: '80.5' }, 'TICKFLEET_HEALTH_PORT', 'a TCP port 0-65535'],
    [{ X_BATCH: '-3' }, 'X_BATCH', 'a positive integer'],
    [{ X_BATCH: '0' }, 'X_BATCH', 'a positive integer'],
    [{ X_BATCH: '1e3' }, 'X_BATCH', 'a positive integer'],
    [{ X_FLAG: 'maybe' }, 'X_FLAG', 'one of 1/0, true/false, yes/no, got "maybe"'],
  ])('rejects %j naming %s and what was expected', (env, variable, expected) => {
    const err = configError(() => parseConfig(Schema, { ...REDIS, ...env }));
    expect(err.code).toBe('E_CONFIG');
    expect(err.variable).toBe(variable);
    expect(err.expected).toBe(expected);
    expect(err.message).toBe(`invalid configuration ${variable}: expected ${expected}`);
  });

  it('reads flags and ports', () => {
    expect(parseConfig(Schema, { ...REDIS, X_FLAG: 'yes', X_PORT: '9100' })).toMatchObject({ X_FLAG: true, X_PORT: 9100 });
    expect(parseConfig(Schema, { ...REDIS, X_FLAG: '0' }).X_FLAG).toBe(false);
  });

  it('reports the first bad variable in schema order', () => {
    expect(configError(() => parseConfig(Schema, { REDIS_URL: 'x', LOG_LEVEL: 'x' })).variable).toBe('REDIS_URL');
  });

  it('ignores variables the schema does not name', () => {
    expect(parseConfig(Schema, { ...REDIS, PATH: '/bin', X_UNKNOWN: '' })).not.toHaveProperty('PATH');
  });
});

describe('envWith', () => {
  it('puts overrides on top of the environment; an undefined override unsets', () => {
    expect(envWith({ A: '2', B: undefined }, { A: '1', B: 'b', C: 'c' })).toEqual({ A: '2', B: undefined, C: 'c' });
  });
});
