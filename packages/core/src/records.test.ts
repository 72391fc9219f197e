import { candleKey } from './records.js';

describe('candleKey', () => {
  const key = (openTime: number): string => candleKey({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', openTime });

  it('writes openTime as String() does, for timestamps and every boundary of the split at 10^9', () => {
    const samples = [
      0,
      1,
      -1,
      59_999,
      999_999_999,
      1e9,
      1e9 + 1,
      2 ** 30 - 1,
      2 ** 30,
      2 ** 31,
      1_700_000_000_000,
      1_700_000_000_000 - 1,
      1_700_000_060_000,
      1e12,
      1e15,
      1e15 + 999_999_999,
      9_007_199_254_740_991,
      9_007_199_254_740_992,
      -1_700_000_000_000,
      1.5,
      1e21,
      Number.NaN,
    ];
    // k * 10^9 - 1 and k * 10^9 + 1 around many k: where a division in floating point could round up.
    for (let k = 1; k <= 9_000_000; k += 99_991) samples.push(k * 1e9 - 1, k * 1e9, k * 1e9 + 1, k * 1e9 + 999_999_999);
    let x = 12345;
    for (let i = 0; i < 20_000; i++) {
      x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
      samples.push(Math.floor((x / 2_147_483_648) * 2e15));
    }
    for (const t of samples) expect(key(t)).toBe(`binance:BTC/USDT:1m:${String(t)}`);
  });
});
