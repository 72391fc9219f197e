import { ManualClock } from '@tickfleet/testkit';
import { ValidationError } from './errors/validation-error.js';
import { alignDown, lastClosedOpenTime, timeframeMs, TIMEFRAMES, Timeframe } from './timeframe.js';

describe('timeframes', () => {
  it('knows every length', () => {
    expect(TIMEFRAMES.map(timeframeMs)).toEqual([60e3, 180e3, 300e3, 900e3, 1800e3, 3600e3, 7200e3, 14400e3, 21600e3, 28800e3, 43200e3, 86400e3, 604800e3]);
  });

  it('aligns to the clock, weeks to Monday', () => {
    const t = Date.UTC(2024, 4, 15, 13, 47, 12); // Wednesday
    expect(alignDown(t, '1m')).toBe(Date.UTC(2024, 4, 15, 13, 47));
    expect(alignDown(t, '4h')).toBe(Date.UTC(2024, 4, 15, 12));
    expect(alignDown(t, '1d')).toBe(Date.UTC(2024, 4, 15));
    expect(alignDown(t, '1w')).toBe(Date.UTC(2024, 4, 13));
    expect(new Date(alignDown(t, '1w')).getUTCDay()).toBe(1);
  });

  it('finds the last closed candle', () => {
    expect(lastClosedOpenTime(Date.UTC(2024, 0, 1, 0, 5, 30), '1m')).toBe(Date.UTC(2024, 0, 1, 0, 4));
    expect(lastClosedOpenTime(Date.UTC(2024, 0, 1, 0, 5, 0), '1m')).toBe(Date.UTC(2024, 0, 1, 0, 4));
  });

  it('rejects unknown timeframes with a message naming them', () => {
    const r = Timeframe.safeParse('7m');
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toContain('"7m"');
  });

  it('refuses an unparsed value that is no timeframe with a ValidationError naming it', () => {
    // A value from outside (JSON, Redis) that skipped parsing: the types cannot stop it.
    expect(() => timeframeMs('7x' as Timeframe)).toThrow(ValidationError);
    expect(() => timeframeMs('7x' as Timeframe)).toThrow('invalid timeframe: expected one of 1m 3m 5m 15m 30m 1h 2h 4h 6h 8h 12h 1d 1w, got "7x"');
  });
});

import { chunkRange } from './timeframe.js';

describe('chunkRange', () => {
  it('splits a range into aligned page-sized chunks covering it exactly once', () => {
    const from = Date.UTC(2024, 0, 1);
    const chunks = chunkRange(from, from + 2500 * 60_000, '1m', 1000);
    expect(chunks).toEqual([
      { fromMs: from, toMs: from + 1000 * 60_000 },
      { fromMs: from + 1000 * 60_000, toMs: from + 2000 * 60_000 },
      { fromMs: from + 2000 * 60_000, toMs: from + 2500 * 60_000 },
    ]);
  });

  it('starts at the first candle opening at or after fromMs', () => {
    const from = Date.UTC(2024, 0, 1, 0, 0, 30);
    expect(chunkRange(from, from + 90_000, '1m', 10)[0]?.fromMs).toBe(Date.UTC(2024, 0, 1, 0, 1));
    expect(chunkRange(from, from, '1m', 10)).toEqual([]);
  });

  it('refuses fewer than one candle per chunk, naming candlesPerChunk', () => {
    expect(() => chunkRange(0, 60_000, '1m', 0)).toThrow(ValidationError);
    expect(() => chunkRange(0, 60_000, '1m', Number.NaN)).toThrow('invalid candlesPerChunk: expected a number >= 1, got null');
  });
});

describe('ManualClock', () => {
  it('moves forward only; a negative advance is a ValidationError naming ms', () => {
    const clock = new ManualClock(1000);
    clock.advance(500);
    expect([clock.now(), clock.monotonic()]).toEqual([1500, 500]);
    expect(() => clock.advance(-1)).toThrow(ValidationError);
    expect(() => clock.advance(-1)).toThrow('invalid ms: expected a non-negative advance (ManualClock cannot go backwards), got -1');
    expect([clock.now(), clock.monotonic()]).toEqual([1500, 500]);
  });
});
