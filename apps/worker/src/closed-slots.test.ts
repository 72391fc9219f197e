import { closedSlots } from './unit-executor.js';

const T = Date.UTC(2024, 0, 1);
const MIN = 60_000;

describe('closedSlots', () => {
  it('counts the closed open times in [from, to)', () => {
    const now = T + 10 * 24 * 3600_000;
    expect(closedSlots(T, T + 1000 * MIN, '1m', now)).toBe(1000);
    expect(closedSlots(T + 1, T + 3 * MIN, '1m', now)).toBe(2); // T itself is before `from`
    expect(closedSlots(T, T + 1, '1m', now)).toBe(1);
    expect(closedSlots(T, T, '1m', now)).toBe(0);
    expect(closedSlots(T, T + 24 * 3600_000, '1h', now)).toBe(24);
  });

  it('stops at the last closed candle: an open one is never owed', () => {
    // At T + 5m30s the candle opened at T + 5m is still open.
    expect(closedSlots(T, T + 60 * MIN, '1m', T + 5 * MIN + 30_000)).toBe(5);
    expect(closedSlots(T + 10 * MIN, T + 60 * MIN, '1m', T + 5 * MIN)).toBe(0);
  });

  it('follows weekly candles, which open on Monday', () => {
    const monday = Date.UTC(2024, 0, 1); // 2024-01-01 is a Monday
    const week = 7 * 24 * 3600_000;
    expect(closedSlots(monday, monday + 3 * week, '1w', monday + 10 * week)).toBe(3);
    expect(closedSlots(monday + 1, monday + 3 * week, '1w', monday + 10 * week)).toBe(2);
  });
});
