import { alignDown, lastClosedOpenTime, timeframeMs, TIMEFRAMES, Timeframe } from './timeframe.js';

describe('timeframes', () => {
  it('knows every length', () => {
    expect(TIMEFRAMES.map(timeframeMs)).toEqual([
      60e3, 180e3, 300e3, 900e3, 1800e3, 3600e3, 7200e3, 14400e3, 21600e3, 28800e3, 43200e3, 86400e3, 604800e3,
    ]);
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
});
