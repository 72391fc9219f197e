import { ManualClock } from '@tickfleet/core';
import { AimdController, p95 } from './aimd-controller.js';
import { aimdLimitsFor, DEFAULT_AIMD_LIMITS, type AimdLimits } from './aimd-settings.js';

const limits = (over: Partial<AimdLimits> = {}): AimdLimits => ({ ...DEFAULT_AIMD_LIMITS, max: 16, increaseAfterMs: 1000, ...over });

describe('AimdController', () => {
  it('halves on a rate limit down to the floor, once per incident', () => {
    const clock = new ManualClock();
    const aimd = new AimdController(limits({ min: 3 }), clock);
    expect(aimd.concurrency).toBe(16);
    expect(aimd.onRateLimited()).toEqual({ concurrency: 8, change: 'halve' });
    // Same incident (requests that were already in flight): no second halving.
    expect(aimd.onRateLimited()).toEqual({ concurrency: 8, change: 'none' });
    clock.advance(1000);
    expect(aimd.onRateLimited().concurrency).toBe(4);
    clock.advance(1000);
    expect(aimd.onRateLimited().concurrency).toBe(3);
    clock.advance(1000);
    expect(aimd.onRateLimited().concurrency).toBe(3);
  });

  it('adds one per increaseAfterMs of clean operation, up to the ceiling, not while frozen', () => {
    const clock = new ManualClock();
    const aimd = new AimdController(limits({ max: 6 }), clock);
    aimd.onRateLimited(clock.now() + 2500); // 6 -> 3, frozen 2.5 s
    const changes: string[] = [];
    for (let i = 0; i < 80; i++) {
      clock.advance(100);
      changes.push(aimd.reportOutcome({ ok: true, latencyMs: 50 }).change);
    }
    // No increase while frozen (until 2.5 s) although 1 s passed; then +1 at 2.5 s, 3.5 s, 4.5 s; 6 is the ceiling.
    expect(changes.filter((c) => c === 'increase')).toHaveLength(3);
    expect(changes.indexOf('increase')).toBe(24);
    expect(changes.lastIndexOf('increase')).toBe(44);
    expect(aimd.concurrency).toBe(6);
  });

  it('subtracts one when the failure ratio or the p95 latency is too high', () => {
    const clock = new ManualClock();
    const aimd = new AimdController(limits({ minSamples: 10, maxFailureRatio: 0.2, maxP95LatencyMs: 500 }), clock);
    const steps = Array.from({ length: 10 }, (_, i) => aimd.reportOutcome({ ok: i % 3 !== 0, latencyMs: 10 }));
    expect(steps.map((s) => s.change).filter((c) => c === 'decrease')).toHaveLength(1);
    expect(aimd.concurrency).toBe(15);
    for (let i = 0; i < 10; i++) aimd.reportOutcome({ ok: true, latencyMs: i === 0 ? 10 : 900 });
    expect(aimd.concurrency).toBe(14);
    // A clean window of 9 outcomes keeps it.
    for (let i = 0; i < 9; i++) aimd.reportOutcome({ ok: false, latencyMs: 10 });
    expect(aimd.concurrency).toBe(14);
  });

  it('derives limits from a connector', () => {
    const l = aimdLimitsFor({ maxInflight: 8, aimd: { min: 2, increaseAfterMs: 5000, maxFailureRatio: 0.1, maxP95LatencyMs: 2000 } });
    expect(l).toMatchObject({ min: 2, max: 8, increaseAfterMs: 5000, maxFailureRatio: 0.1, maxP95LatencyMs: 2000 });
    expect(aimdLimitsFor({ maxInflight: 8, aimd: { min: 1, max: 3, increaseAfterMs: 1, maxFailureRatio: 0, maxP95LatencyMs: 1 } }).max).toBe(3);
  });

  it('computes a nearest-rank p95', () => {
    expect(p95([])).toBe(0);
    expect(p95(Array.from({ length: 100 }, (_, i) => i + 1))).toBe(95);
    expect(p95([5])).toBe(5);
  });
});
