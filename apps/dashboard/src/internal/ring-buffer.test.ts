import { EMPTY_OUTCOME_RECORD, venueHealth } from '@tickfleet/budget';
import { ValidationError } from '@tickfleet/core';
import { counterIncrease, counterRates, RingBuffer } from './ring-buffer.js';
import { freezeMarks, historyRange, HistoryCollector, type VenueSample } from '../fleet-history.js';
import type { FleetStatus, VenueStatus } from '../fleet-status.js';

describe('RingBuffer', () => {
  it('keeps at most its capacity, dropping the oldest, and lists oldest first', () => {
    const ring = new RingBuffer<number>(3);
    expect(ring.toArray()).toEqual([]);
    expect(ring.last()).toBeUndefined();
    ring.push(1);
    ring.push(2);
    expect(ring.toArray()).toEqual([1, 2]);
    for (let i = 3; i <= 10; i++) ring.push(i);
    expect(ring.size).toBe(3);
    expect(ring.toArray()).toEqual([8, 9, 10]);
    expect(ring.last()).toBe(10);
  });

  it('refuses a capacity that is not a positive integer, naming it', () => {
    expect(() => new RingBuffer(0)).toThrow(ValidationError);
    expect(() => new RingBuffer(2.5)).toThrow(/invalid capacity: expected a positive integer, got 2.5/);
  });
});

describe('counterRates', () => {
  it('derives per-second rates from the deltas between samples; none for the first', () => {
    expect(counterRates([0, 1000, 3000, 3500], [10, 20, 20, 30])).toEqual([null, 10, 0, 20]);
  });

  it('counts a counter that went down as a reset from 0, never a negative rate', () => {
    // 50 -> 4: the source restarted and counted 4 since.
    expect(counterRates([0, 2000, 4000], [40, 50, 4])).toEqual([null, 5, 2]);
    expect(counterIncrease(50, 4)).toBe(4);
    expect(counterIncrease(4, 9)).toBe(5);
  });

  it('gives no rate for a sample not later than the previous one', () => {
    expect(counterRates([0, 0, 1000], [1, 5, 7])).toEqual([null, null, 2]);
  });

  it('refuses columns of different lengths', () => {
    expect(() => counterRates([0, 1], [1])).toThrow(ValidationError);
  });
});

const sample = (atMs: number, freeze: VenueSample['freeze'] = null): VenueSample => ({
  atMs,
  budgetUsed: 1,
  budgetLimit: 10,
  concurrency: 2,
  concurrencyMax: 4,
  cursorLagMs: null,
  unitsCompleted: 0,
  recordsWritten: 0,
  freeze,
});

describe('freezeMarks', () => {
  it('makes one band per run of frozen samples of one cause, extended by later ends and cut where it was lifted', () => {
    const marks = freezeMarks([
      sample(0),
      sample(1000, { cause: '429', untilMs: 3000 }),
      sample(2000, { cause: '429', untilMs: 6000 }),
      sample(3000, { cause: '418', untilMs: 60_000 }),
      sample(4000),
      sample(5000, { cause: 'manual', untilMs: 90_000 }),
    ]);
    expect(marks).toEqual([
      { cause: '429', fromMs: 1000, toMs: 3000 },
      { cause: '418', fromMs: 3000, toMs: 4000 },
      { cause: 'manual', fromMs: 5000, toMs: 90_000 },
    ]);
  });
});

describe('historyRange', () => {
  it('accepts 15, 30 or 60 minutes (15 by default) and names anything else', () => {
    expect(historyRange(undefined)).toBe(15);
    expect(historyRange('60')).toBe(60);
    expect(() => historyRange('45')).toThrow(/invalid minutes: expected one of 15, 30, 60, got "45"/);
  });
});

describe('HistoryCollector', () => {
  const venueStatus = (venue: string): VenueStatus => ({
    venue,
    status: 'active',
    maxInflight: 4,
    concurrency: { current: 3, min: 1, max: 4 },
    globalConcurrency: 3,
    budget: { policy: 'fixed-window', used: 7, limit: 10, remaining: 3, periodMs: 60_000, windowStartMs: 0, resetAtMs: 60_000 },
    freeze: null,
    queue: { waiting: 0, prioritized: 0, delayed: 0, active: 0, completed: 0, failed: 0 },
    runnable: 0,
    blocked: 0,
    cursorLag: { maxMs: 90_000, jobId: null, maxCadenceRatio: null, jobs: 0, withoutCursor: 0 },
    openGaps: 0,
    liveWorkers: null,
    leases: { jobs: 0, untilMs: null },
    jobsCount: 0,
    activeJobsCount: 0,
    lastJobRunAt: null,
    health: venueHealth(EMPTY_OUTCOME_RECORD, { status: 'active', freeze: null, bookCooldownUntilMs: 0, nowMs: 0 }),
  });

  it('keeps an hour of samples per venue and serves rates and totals from counter deltas, resets included', async () => {
    let now = 1_000_000;
    let units = 0;
    const status = (): Promise<FleetStatus> =>
      Promise.resolve({
        atMs: now,
        venues: [venueStatus('binance')],
        spool: null,
        streams: null,
        bookLoops: null,
        totals: { runnable: 0, blocked: 0, waiting: 0, active: 0, delayed: 0, failed: 0, openGaps: 0, frozenVenues: 0 },
      });
    const collector = new HistoryCollector({ status, completions: () => Promise.resolve({ units, records: units * 100 }), intervalMs: 60_000 });
    expect(collector.capacity).toBe(61);
    // 70 samples a minute apart, 2 units a minute; at the 66th the counter has started over (a
    // restarted source) and counted 2 since.
    for (let i = 0; i < 70; i++) {
      if (i === 65) units = 2;
      await collector.sample();
      units += 2;
      now += 60_000;
    }
    const lastAt = now - 60_000;
    const hour = collector.history(60, lastAt);
    const h = hour.venues[0]!;
    expect(h.venue).toBe('binance');
    // Capacity-bound: the ring kept the newest 61 samples, the range shows those of the last hour.
    expect(h.t).toHaveLength(61);
    expect(h.t[0]).toBe(lastAt - 60 * 60_000);
    expect(h.t.at(-1)).toBe(lastAt);
    // The oldest kept sample has no predecessor left to take a delta from.
    expect(h.unitsPerSec[0]).toBeNull();
    expect(h.unitsPerSec.slice(1).every((r) => r !== null && Math.abs(r - 2 / 60) < 1e-9)).toBe(true);
    expect(h.recordsPerSec.at(-1)).toBeCloseTo(200 / 60, 9);
    expect(h.totals).toEqual({ unitsCompleted: 60 * 2, recordsWritten: 60 * 200 });
    expect(h.budgetUsed.at(-1)).toBe(7);
    expect(h.budgetLimit.at(-1)).toBe(10);
    expect(h.concurrency.at(-1)).toBe(3);
    expect(h.concurrencyMax.at(-1)).toBe(4);
    expect(h.cursorLagSec.at(-1)).toBe(90);

    const quarter = collector.history(15, lastAt).venues[0]!;
    expect(quarter.t).toHaveLength(16);
    // Its first sample's rate comes from the older sample before the range.
    expect(quarter.unitsPerSec[0]).toBeCloseTo(2 / 60, 9);
    expect(quarter.totals.unitsCompleted).toBe(32);

    // A snapshot reused by the status cache (same atMs) is not a second sample.
    now = lastAt;
    await collector.sample();
    expect(collector.history(60, lastAt).venues[0]!.t).toHaveLength(61);
  });
});
