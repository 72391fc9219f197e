import { BinanceKlines, isBinanceKlines } from './binance-schemas.js';

const row = (): unknown[] => [1_704_067_200_000, '42000.1', '42010', '41990.5', '42005.25', '12.5', 1_704_067_259_999, '525000.1', 310, '6.2', '260000', '0'];

/** One field of a valid row replaced: each is a page the schema refuses or accepts. */
const variants: Array<[string, (r: unknown[]) => void]> = [
  ['valid', () => undefined],
  ['extra trailing fields', (r) => r.push('x', { y: 1 })],
  ['only the 11 checked fields', (r) => r.splice(11)],
  ['10 fields', (r) => r.splice(10)],
  ['open time as string', (r) => (r[0] = '1704067200000')],
  ['negative open time', (r) => (r[0] = -1)],
  ['fractional close time', (r) => (r[6] = 1.5)],
  ['unsafe integer time', (r) => (r[0] = 2 ** 60)],
  ['NaN trades', (r) => (r[8] = Number.NaN)],
  ['negative trades', (r) => (r[8] = -3)],
  ['zero trades and -0 time', (r) => ((r[8] = 0), (r[0] = -0))],
  ['price as number', (r) => (r[1] = 42000.1)],
  ['price with exponent', (r) => (r[4] = '1e-7')],
  ['negative decimal', (r) => (r[10] = '-0.5')],
  ['decimal with spaces', (r) => (r[5] = ' 12.5')],
  ['empty decimal', (r) => (r[9] = '')],
  ['null volume', (r) => (r[5] = null)],
  ['row as object', (r) => r.splice(0, r.length)],
];

describe('isBinanceKlines', () => {
  it.each(variants)('agrees with the BinanceKlines schema: %s', (_name, change) => {
    const changed = row();
    change(changed);
    const page = [row(), changed, row()];
    expect(isBinanceKlines(page)).toBe(BinanceKlines.safeParse(page).success);
  });

  it('agrees on pages that are not arrays of rows', () => {
    for (const page of [[], {}, null, 'x', [null], [{ 0: 1 }], [[]]]) expect(isBinanceKlines(page)).toBe(BinanceKlines.safeParse(page).success);
  });
});
