import { TRANSIENT_RETRY, transientRetryDelayMs, UNIT_JOB_OPTIONS } from './job-options.js';

describe('unit retry policy', () => {
  it('backs off transient failures exponentially from 2 s, in the upper half of each step, capped at 5 min', () => {
    expect(transientRetryDelayMs(1, undefined, () => 0)).toBe(1000);
    expect(transientRetryDelayMs(1, undefined, () => 1)).toBe(2000);
    expect(transientRetryDelayMs(4, undefined, () => 1)).toBe(16_000);
    expect(transientRetryDelayMs(9, undefined, () => 1)).toBe(TRANSIENT_RETRY.capMs);
    // However long the storm, the delay stays at the cap (no overflow, no unbounded wait).
    expect(transientRetryDelayMs(10_000, undefined, () => 0.5)).toBe(0.75 * TRANSIENT_RETRY.capMs);
    expect(transientRetryDelayMs(50, TRANSIENT_RETRY.storeCapMs, () => 1)).toBe(30_000);
  });

  it('keeps BullMQ attempts for failures of unknown cause only', () => {
    expect(UNIT_JOB_OPTIONS.attempts).toBe(5);
    expect(UNIT_JOB_OPTIONS.backoff).toEqual({ type: 'exponential', delay: 2000 });
  });
});
