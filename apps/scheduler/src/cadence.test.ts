import { stableHash } from '@tickfleet/core';
import { CADENCE_DEFAULTS, dailyFilesRange, jitterOf, nextRunAt, unitKindFor } from './cadence.js';

const T = Date.UTC(2024, 4, 15, 13, 47, 12); // a Wednesday
const noJitter = { ...CADENCE_DEFAULTS, jitterMs: 0 };

describe('cadence', () => {
  it('maps job types to unit kinds', () => {
    expect(['ohlcv', 'trades', 'book', 'files', 'discovery', 'series'].map((t) => unitKindFor(t as never))).toEqual([
      'incremental',
      'incremental',
      'book-poll',
      'daily-files',
      'discovery',
      'series',
    ]);
  });

  it('schedules candles at the next close plus the close delay, aligned to the clock', () => {
    const job = (tf: '1m' | '1h' | '1w') => ({ id: `binance:BTC/USDT:${tf}:ohlcv`, venue: 'binance', type: 'ohlcv' as const, timeframe: tf });
    expect(nextRunAt(job('1m'), T, noJitter)).toBe(Date.UTC(2024, 4, 15, 13, 48, 2));
    expect(nextRunAt(job('1h'), T, noJitter)).toBe(Date.UTC(2024, 4, 15, 14, 0, 2));
    expect(nextRunAt(job('1w'), T, noJitter)).toBe(Date.UTC(2024, 4, 20, 0, 0, 2)); // next Monday
    // Claimed late but inside the delay after a close: that close's run is next, not the one after.
    expect(nextRunAt(job('1m'), Date.UTC(2024, 4, 15, 13, 48, 1), noJitter)).toBe(Date.UTC(2024, 4, 15, 13, 48, 2));
  });

  it('schedules US-equity candles by the trading calendar: day bars after after-hours, no minute runs over the weekend', () => {
    const day = { id: 'polygon:AAPL:1d:ohlcv', venue: 'polygon', type: 'ohlcv' as const, timeframe: '1d' as const };
    // Wednesday 2024-05-15: its day bar is final at 20:00 New York (00:00Z, summer time)
    expect(nextRunAt(day, T, noJitter)).toBe(Date.UTC(2024, 4, 16, 0, 0, 2));
    const minute = { id: 'polygon:AAPL:1m:ohlcv', venue: 'polygon', type: 'ohlcv' as const, timeframe: '1m' as const };
    expect(nextRunAt(minute, T, noJitter)).toBe(Date.UTC(2024, 4, 15, 13, 48, 2));
    // Friday 20:00 New York: the next minute with trading closes Monday 04:01 New York
    expect(nextRunAt(minute, Date.UTC(2024, 4, 18, 0, 0, 5), noJitter)).toBe(Date.UTC(2024, 4, 20, 8, 1, 2));
  });

  it('runs polling jobs on a clock-aligned grid and files after the UTC day', () => {
    const book = { id: 'polymarket:123:-:book', venue: 'polymarket', type: 'book' as const, timeframe: null };
    expect(nextRunAt(book, T, noJitter)).toBe(Date.UTC(2024, 4, 15, 13, 47, 15));
    const files = { id: 'xetra:ALL:-:files', venue: 'xetra', type: 'files' as const, timeframe: null };
    expect(nextRunAt(files, T, noJitter)).toBe(Date.UTC(2024, 4, 16, 1));
    expect(dailyFilesRange(T, noJitter)).toEqual({ fromMs: Date.UTC(2024, 4, 14), toMs: Date.UTC(2024, 4, 15) });
    // Economic series: once a day, seriesDelayMs (22 h) after UTC midnight, when FRED has published the day before.
    const curve = { id: 'fred:treasury-curve:-:series', venue: 'fred', type: 'series' as const, timeframe: null };
    expect(nextRunAt(curve, T, noJitter)).toBe(Date.UTC(2024, 4, 15, 22));
    expect(nextRunAt(curve, Date.UTC(2024, 4, 15, 22, 0, 1), noJitter)).toBe(Date.UTC(2024, 4, 16, 22));
  });

  it('adds a stable per-job jitter below min(jitterMs, period / 10), without drift', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `binance:S${i}:1m:ohlcv`);
    const jitters = ids.map((id) => jitterOf(id, 60_000, 1000));
    expect(Math.max(...jitters)).toBeLessThan(1000);
    expect(new Set(jitters).size).toBeGreaterThan(100);
    expect(jitterOf(ids[0]!, 60_000, 1000)).toBe(jitters[0]);
    expect(jitterOf('x:y:-:book', 5000, 1000)).toBeLessThan(500);
    // Polling runs claimed on time keep their offset: due times stay exactly one period apart.
    const book = { id: 'polymarket:123:-:book', venue: 'polymarket', type: 'book' as const, timeframe: null };
    const first = nextRunAt(book, T, CADENCE_DEFAULTS);
    const second = nextRunAt(book, first, CADENCE_DEFAULTS);
    expect(second - first).toBe(CADENCE_DEFAULTS.bookEveryMs);
  });

  it('keeps the jitter of every existing job across versions (sha256 of the id, as stableHash computes it)', () => {
    // Values computed with parseInt(stableHash(id).slice(0, 8), 16): a changed hash would move
    // every job's due time once.
    for (const id of ['binance:BTC/USDT:1m:ohlcv', 'polymarket:123:-:book', 'xetra:ALL:-:files']) {
      expect(jitterOf(id, 86_400_000, 3_600_000)).toBe(parseInt(stableHash(id).slice(0, 8), 16) % 3_600_000);
    }
    expect(jitterOf('binance:BTC/USDT:1m:ohlcv', 60_000, 1000)).toBe(90);
    expect(jitterOf('polymarket:123:-:book', 60_000, 1000)).toBe(971);
    expect(jitterOf('xetra:ALL:-:files', 86_400_000, 3_600_000)).toBe(2_962_882);
  });
});
