import { parseConfig } from '@tickfleet/config';
import { ConfigError } from '@tickfleet/core';
import { WorkerEnv } from './worker-env.js';

const REQUIRED = { REDIS_URL: 'redis://127.0.0.1:6379' };

describe('WorkerEnv: persistence settings', () => {
  it("defaults to the design's: 3 sink retries from 100 ms, degraded after 3, 64 MiB segments, dedup off (300 s, 100,000 keys when on)", () => {
    expect(parseConfig(WorkerEnv, REQUIRED)).toMatchObject({
      TICKFLEET_SINK_MAX_RETRIES: 3,
      TICKFLEET_SINK_RETRY_BASE_MS: 100,
      TICKFLEET_SINK_FAILURES_FOR_DEGRADED: 3,
      TICKFLEET_SPOOL_MAX_SEGMENT_BYTES: 64 * 1024 * 1024,
      TICKFLEET_DEDUP: 'off',
      TICKFLEET_DEDUP_WINDOW_MS: 300_000,
      TICKFLEET_DEDUP_MAX_KEYS: 100_000,
    });
  });

  it('takes 0 retries and a 0 ms backoff, durations with units', () => {
    expect(
      parseConfig(WorkerEnv, { ...REQUIRED, TICKFLEET_SINK_MAX_RETRIES: '0', TICKFLEET_SINK_RETRY_BASE_MS: '0', TICKFLEET_DEDUP_WINDOW_MS: '1m' }),
    ).toMatchObject({
      TICKFLEET_SINK_MAX_RETRIES: 0,
      TICKFLEET_SINK_RETRY_BASE_MS: 0,
      TICKFLEET_DEDUP_WINDOW_MS: 60_000,
    });
  });

  it.each([
    ['TICKFLEET_SINK_MAX_RETRIES', '11', 'a whole number of retries from 0 to 10'],
    ['TICKFLEET_SINK_FAILURES_FOR_DEGRADED', '0', 'a positive integer'],
    ['TICKFLEET_SPOOL_MAX_SEGMENT_BYTES', '64MB', 'a positive integer'],
    ['TICKFLEET_DEDUP', 'yes', 'one of on, off'],
    ['TICKFLEET_DEDUP_MAX_KEYS', '0', 'a positive integer'],
  ])('refuses %s=%s naming the variable', (name, value, expected) => {
    let err: unknown;
    try {
      parseConfig(WorkerEnv, { ...REQUIRED, [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(name);
    expect((err as Error).message).toContain(expected);
  });
});
