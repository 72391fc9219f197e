import { ValidationError } from '@tickfleet/core';
import { queueNameFor, venueKey } from './names.js';
import { BACKFILL_PRIORITY_BASE, unitPriority } from './priorities.js';
import { unitJobId } from './unit-job-id.js';

describe('unitJobId', () => {
  const live = { kind: 'incremental' as const, venue: 'binance', jobId: 'binance:BTC/USDT:1m:ohlcv', dueAt: 1_704_067_260_000 };

  it('is deterministic per job and due time, and BullMQ-safe (no ":", not an integer)', () => {
    expect(unitJobId(live)).toBe('live|binance|BTC/USDT|1m|ohlcv|1704067260000');
    expect(unitJobId({ ...live })).toBe(unitJobId(live));
    expect(unitJobId({ ...live, dueAt: live.dueAt + 60_000 })).not.toBe(unitJobId(live));
    expect(unitJobId(live)).not.toContain(':');
  });

  it('names backfill chunks by backfill id and range', () => {
    const id = unitJobId({ kind: 'backfill', jobId: live.jobId, backfillId: 'bf:abc', fromMs: 0, toMs: 60_000 });
    expect(id).toBe('bf|bf|abc|0-60000');
  });

  it('names a per-day unit by venue, day and its set of jobs, whatever their order', () => {
    const day = {
      kind: 'session-day' as const,
      venue: 'alpaca',
      jobId: 'alpaca:A:1d:ohlcv',
      jobIds: ['alpaca:A:1d:ohlcv', 'alpaca:B:1d:ohlcv'],
      fromMs: 1_705_381_200_000,
    };
    const id = unitJobId(day);
    expect(id).toMatch(/^day\|alpaca\|1705381200000\|[0-9a-f]{20}$/);
    expect(unitJobId({ ...day, jobIds: [...day.jobIds].reverse() })).toBe(id);
    expect(unitJobId({ ...day, jobIds: ['alpaca:A:1d:ohlcv'] })).not.toBe(id);
    expect(() => unitJobId({ ...day, jobIds: undefined })).toThrow(ValidationError);
    // the slices of one universe job's day are distinct units
    const slice = { ...day, jobIds: ['polygon:@megacaps:1d:ohlcv'], venue: 'polygon' };
    expect(unitJobId({ ...slice, members: ['AAPL', 'AMZN'] })).not.toBe(unitJobId({ ...slice, members: ['GOOG', 'MSFT'] }));
    expect(unitJobId({ ...slice, members: ['AAPL', 'AMZN'] })).not.toBe(unitJobId(slice));
  });

  it('rejects units it cannot name', () => {
    expect(() => unitJobId({ kind: 'backfill', jobId: live.jobId })).toThrow(ValidationError);
    expect(() => unitJobId({ kind: 'book-poll', jobId: live.jobId })).toThrow(/unit\.dueAt/);
  });
});

describe('priorities', () => {
  it('puts every live unit above every backfill chunk, then orders by job priority', () => {
    const lowLive = unitPriority({ kind: 'incremental', priority: -1000 });
    const highBackfill = unitPriority({ kind: 'backfill', priority: 1000 });
    expect(lowLive).toBeLessThan(highBackfill);
    expect(highBackfill).toBe(BACKFILL_PRIORITY_BASE);
    expect(unitPriority({ kind: 'book-poll', priority: 10 })).toBeLessThan(unitPriority({ kind: 'book-poll', priority: 0 }));
    expect(unitPriority({ kind: 'incremental', priority: 1000 })).toBeGreaterThanOrEqual(1);
  });
});

describe('queue names', () => {
  it('tag each venue for Redis Cluster', () => {
    expect(queueNameFor('binance')).toBe('{binance}');
    expect(venueKey('tickfleet', 'kraken', 'control')).toBe('tickfleet:venue:{kraken}:control');
    expect(() => queueNameFor('Bad Venue')).toThrow(/venue/);
    expect(() => venueKey('{x}', 'kraken', 'control')).toThrow(/prefix/);
  });
});
