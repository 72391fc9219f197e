import { EARLIEST_DATE_MS, parseIsoInstant } from './input-bounds.js';
import { SymbolName } from './names.js';

describe('parseIsoInstant', () => {
  it.each([
    ['2024-02-29', Date.UTC(2024, 1, 29)],
    ['2024-01-01T12:00:00Z', Date.UTC(2024, 0, 1, 12)],
    ['2024-01-01T12:00', Date.UTC(2024, 0, 1, 12)],
    ['2024-01-01T12:00:00.5Z', Date.UTC(2024, 0, 1, 12, 0, 0, 500)],
    ['2024-01-01T12:00:00+02:00', Date.UTC(2024, 0, 1, 10)],
    ['1990-01-01', EARLIEST_DATE_MS],
  ])('accepts %s', (text, ms) => {
    expect(parseIsoInstant(text)).toBe(ms);
  });

  it.each([
    '2024-02-30',
    '2023-02-29',
    '2024-04-31',
    '2024-13-01',
    '2024-00-10',
    '2024-01-01T24:00Z',
    '2024-01-01T12:60',
    '1900-01-01',
    '0001-01-01',
    '1989-12-31T23:59:59Z',
    '20240101',
    'garbage',
    '',
  ])('refuses %s instead of rolling it over', (text) => {
    expect(parseIsoInstant(text)).toBeUndefined();
  });
});

describe('SymbolName', () => {
  it.each(['BTC/USDT', 'AAPL', 'BRK.B', 'DE0005140008', '21742633143463906290569050155826241533067272736897614950488156847949938836455', 'markets'])(
    'accepts %s',
    (s) => {
      expect(SymbolName.safeParse(s).success).toBe(true);
    },
  );
  it.each(['../../etc/passwd', '/etc/passwd', 'a//b', 'BTC/', '.hidden', 'a/../b', 'BTC USDT', 'x:y', ''])('refuses %s', (s) => {
    expect(SymbolName.safeParse(s).success).toBe(false);
  });
});
