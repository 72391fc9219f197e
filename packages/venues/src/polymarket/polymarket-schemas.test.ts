import { isPolymarketBooks, PolymarketBooks } from './polymarket-schemas.js';

const book = (): Record<string, unknown> => ({
  market: '0xabc',
  asset_id: '123',
  timestamp: '1700000000123',
  hash: 'f00',
  bids: [
    { price: '0.48', size: '100' },
    { price: '0.49', size: '12.5' },
  ],
  asks: [
    { price: '0.52', size: '7' },
    { price: '0.51', size: '30' },
  ],
  min_order_size: '5',
  tick_size: '0.01',
  neg_risk: false,
  last_trade_price: '0.5',
});

/** One field of a valid book replaced: each is a batch the schema refuses or accepts. */
const variants: Array<[string, (b: Record<string, unknown>) => void]> = [
  ['valid', () => undefined],
  ['optional fields absent', (b) => ['hash', 'min_order_size', 'tick_size', 'neg_risk'].forEach((k) => delete b[k])],
  ['extra fields on a level', (b) => ((b.bids as object[])[0] = { price: '0.4', size: '1', owner: 'x' })],
  ['timestamp as number', (b) => (b.timestamp = 1_700_000_000_123)],
  ['timestamp as boolean', (b) => (b.timestamp = true)],
  ['timestamp absent', (b) => delete b.timestamp],
  ['market absent', (b) => delete b.market],
  ['asset id as number', (b) => (b.asset_id = 123)],
  ['hash null', (b) => (b.hash = null)],
  ['neg_risk as string', (b) => (b.neg_risk = 'false')],
  ['tick size as number', (b) => (b.tick_size = 0.01)],
  ['bids absent', (b) => delete b.bids],
  ['asks as object', (b) => (b.asks = {})],
  ['empty sides', (b) => ((b.bids = []), (b.asks = []))],
  ['price as number', (b) => ((b.bids as object[])[1] = { price: 0.49, size: '1' })],
  ['size with exponent', (b) => ((b.asks as object[])[0] = { price: '0.5', size: '1e3' })],
  ['size absent', (b) => ((b.asks as object[])[0] = { price: '0.5' })],
  ['level as array', (b) => ((b.asks as unknown[])[0] = ['0.5', '1'])],
  ['level null', (b) => ((b.bids as unknown[])[0] = null)],
];

describe('isPolymarketBooks', () => {
  it.each(variants)('agrees with the PolymarketBooks schema: %s', (_name, change) => {
    const changed = book();
    change(changed);
    const batch = [book(), changed, book()];
    expect(isPolymarketBooks(batch)).toBe(PolymarketBooks.safeParse(batch).success);
  });

  it('agrees on answers that are not arrays of books', () => {
    for (const batch of [[], {}, null, 'x', [null], [[]], [1], [book(), []]]) expect(isPolymarketBooks(batch)).toBe(PolymarketBooks.safeParse(batch).success);
  });
});
