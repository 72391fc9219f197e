import { ValidationError } from './errors/validation-error.js';
import { KRAKEN_MAX_STREAM_SYMBOLS, parseStreamInput, type StreamInput } from './stream.js';

const pairs = (n: number): string[] => Array.from({ length: n }, (_, i) => `C${i}/USDT`);

function refusal(input: StreamInput): ValidationError {
  try {
    parseStreamInput(input);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe('parseStreamInput', () => {
  it('normalises pairs and channels and defaults the book depth per venue', () => {
    expect(
      parseStreamInput({ name: 'majors', venue: 'binance', symbols: [' btc/usdt', 'BTC/USDT', 'eth/usdt'], channels: ['book', 'trades', 'book'] }),
    ).toEqual({
      name: 'majors',
      venue: 'binance',
      symbols: ['BTC/USDT', 'ETH/USDT'],
      channels: ['trades', 'book'],
      bookDepth: 1000,
    });
    expect(parseStreamInput({ name: 'k', venue: 'kraken', symbols: ['BTC/USD'], channels: ['book'], enabled: false })).toMatchObject({
      bookDepth: 10,
      enabled: false,
    });
    expect(parseStreamInput({ name: 'k', venue: 'kraken', symbols: ['BTC/USD'] })).toMatchObject({ channels: ['trades'], bookDepth: null });
  });

  it("holds Binance to 1024 streams per connection (one per symbol and channel) and Kraken to tickfleet's cap", () => {
    expect(parseStreamInput({ name: 'b', venue: 'binance', symbols: pairs(1024) }).symbols).toHaveLength(1024);
    expect(parseStreamInput({ name: 'b', venue: 'binance', symbols: pairs(512), channels: ['trades', 'book'] }).symbols).toHaveLength(512);
    expect(refusal({ name: 'b', venue: 'binance', symbols: pairs(513), channels: ['trades', 'book'] }).message).toBe(
      'invalid symbols: expected at most 512 distinct symbols for a binance stream with trades+book (Binance serves 1024 streams per connection, one per symbol and channel), got "513 symbols"',
    );
    expect(refusal({ name: 'b', venue: 'binance', symbols: pairs(1025) }).field).toBe('symbols');
    expect(refusal({ name: 'k', venue: 'kraken', symbols: pairs(KRAKEN_MAX_STREAM_SYMBOLS + 1) }).message).toMatch(
      /expected at most 100 distinct symbols for a kraken stream with trades \(tickfleet's cap per Kraken connection\)/,
    );
  });

  it('refuses bad input naming the field and what the venue takes', () => {
    const cases: Array<[StreamInput, string, RegExp]> = [
      [{ name: 'x', venue: 'alpaca', symbols: ['BTC/USD'] }, 'venue', /a venue with streams \(binance, kraken\), got "alpaca"/],
      [{ name: '9x', venue: 'binance', symbols: ['BTC/USDT'] }, 'stream name', /1-64 of \[a-z0-9_-\], starting with a letter/],
      [{ name: 'x', venue: 'binance', symbols: [] }, 'symbols', /at least one symbol such as BTC\/USDT/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT', 'BTCUSDT'] }, 'symbols[1]', /a pair such as BTC\/USDT .*got "BTCUSDT"/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT'], channels: ['quotes'] }, 'channels[0]', /one of trades, book, got "quotes"/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT'], channels: [] }, 'channels', /at least one of trades, book/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT'], bookDepth: 100 }, 'bookDepth', /no book depth for a stream without the book channel/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT'], channels: ['book'], bookDepth: 4 }, 'bookDepth', /an integer in 5\.\.5000 for binance, got 4/],
      [{ name: 'x', venue: 'binance', symbols: ['BTC/USDT'], channels: ['book'], bookDepth: 5001 }, 'bookDepth', /5\.\.5000/],
      [
        { name: 'x', venue: 'kraken', symbols: ['BTC/USD'], channels: ['book'], bookDepth: 50 },
        'bookDepth',
        /one of 10, 25, 100, 500, 1000 for kraken, got 50/,
      ],
    ];
    for (const [input, field, message] of cases) {
      const err = refusal(input);
      expect(err.field).toBe(field);
      expect(err.message).toMatch(message);
    }
  });
});
