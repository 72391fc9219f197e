import { usEquitySession } from './calendar.js';
import { nextSessionDay, sessionAfter, sessionDayCursor, sessionDayFinalAt, sessionDayVenueOf } from './session-days.js';

const day = (ms: number): string => new Date(ms - 5 * 3_600_000).toISOString().slice(0, 10);

describe('per-day session units', () => {
  it('applies to Alpaca day and minute candle jobs only', () => {
    expect(sessionDayVenueOf({ venue: 'alpaca', type: 'ohlcv', timeframe: '1m' })?.symbolsPerRequest).toBe(100);
    expect(sessionDayVenueOf({ venue: 'alpaca', type: 'ohlcv', timeframe: '1h' })).toBeUndefined();
    expect(sessionDayVenueOf({ venue: 'binance', type: 'ohlcv', timeframe: '1d' })).toBeUndefined();
  });

  it('walks sessions from the start or the cursor, skipping weekends and holidays', () => {
    // Wednesday 2024-01-24 12:00Z: 7 days back is Wednesday the 17th; day bars 30 days back (Christmas Eve is an early close)
    const now = Date.UTC(2024, 0, 24, 12);
    expect(nextSessionDay({ timeframe: '1m', since: null, cursor: null }, now).date).toBe('2024-01-17');
    expect(nextSessionDay({ timeframe: '1d', since: null, cursor: null }, now).date).toBe('2023-12-26');
    expect(nextSessionDay({ timeframe: '1m', since: Date.UTC(2024, 0, 13), cursor: null }, now).date).toBe('2024-01-12');
    const fri = usEquitySession('2024-01-12')!;
    // Friday's bars stored: next is Tuesday (MLK Monday closed)
    expect(nextSessionDay({ timeframe: '1d', since: null, cursor: sessionDayCursor('1d', fri) }, now).date).toBe('2024-01-16');
    expect(nextSessionDay({ timeframe: '1m', since: null, cursor: sessionDayCursor('1m', fri) }, now).date).toBe('2024-01-16');
    expect(sessionAfter(fri).date).toBe('2024-01-16');
    expect(nextSessionDay({ timeframe: '1d', since: Date.UTC(2024, 0, 13), cursor: null }, now).date).toBe('2024-01-16');
    expect(day(sessionDayCursor('1m', fri))).toBe('2024-01-12');
  });

  it('gates a day until it is final: every bar after the after-hours session and the SIP delay', () => {
    const s = usEquitySession('2024-11-29')!; // the day after Thanksgiving closes at 13:00
    expect(new Date(sessionDayFinalAt('1d', s)).toISOString()).toBe('2024-11-29T22:15:00.000Z');
    expect(new Date(sessionDayFinalAt('1m', s)).toISOString()).toBe('2024-11-29T22:15:00.000Z');
  });
});
