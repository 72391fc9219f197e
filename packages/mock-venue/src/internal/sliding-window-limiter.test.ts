import { unitFloat } from '../data/random.js';
import type { EmulatedLimit } from '../scenario.js';
import { SlidingWindowLimiter } from './sliding-window-limiter.js';

const settings = (limit: number, windowMs: number, maxDelayMs: number): EmulatedLimit => ({
  enabled: true,
  limit,
  windowMs,
  banAfter: 0,
  banMs: 0,
  maxDelayMs,
});

/** Largest number of `times` (any order) in one half-open sliding window `(t - windowMs, t]`. */
function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let hi = 0, lo = 0; hi < sorted.length; hi++) {
    while ((sorted[lo] ?? 0) <= (sorted[hi] ?? 0) - windowMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

describe('SlidingWindowLimiter', () => {
  test.each(['delay', 'reject'] as const)('%s: 20,000 bursty arrivals never put more than the limit into any sliding window', (mode) => {
    const limiter = new SlidingWindowLimiter(settings(50, 100, 150), mode);
    const served: number[] = [];
    const tooLate: number[] = [];
    const outOfOrder: number[] = [];
    let now = 1_000_000;
    let lastServed = 0;
    for (let i = 0; i < 20_000; i++) {
      // bursts (many at one instant) and pauses, deterministic
      now += unitFloat('gap', i) < 0.7 ? 0 : Math.floor(unitFloat('len', i) * 40);
      const d = limiter.decide(now, 1);
      if (d.kind !== 'accept') continue;
      if (d.delayMs > (mode === 'delay' ? 150 : 0)) tooLate.push(i);
      // first in, first out: nobody is served before someone queued earlier
      if (now + d.delayMs < lastServed) outOfOrder.push(i);
      lastServed = now + d.delayMs;
      served.push(lastServed);
    }
    expect(tooLate).toEqual([]);
    expect(outOfOrder).toEqual([]);
    expect(served.length).toBeGreaterThan(2000);
    expect(maxInWindow(served, 100)).toBe(50);
    expect(limiter.maxWindowWeight).toBe(50);
    expect(limiter.weightUsed).toBe(served.length);
    expect(limiter.overLimit).toBe(20_000 - served.length + limiter.delayed);
  });
});
