import { jobId, parseJobId } from './job-id.js';
import { ValidationError } from './errors/validation-error.js';
import { dedupKey } from './envelope.js';

describe('job ids', () => {
  it('round-trips', () => {
    const id = jobId({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', type: 'ohlcv' });
    expect(id).toBe('binance:BTC/USDT:1m:ohlcv');
    expect(parseJobId(id)).toEqual({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', type: 'ohlcv' });
    expect(parseJobId('polymarket:123:-:book').timeframe).toBeUndefined();
  });

  it.each(['binance:BTC/USDT:1m', 'Binance:BTC/USDT:1m:ohlcv', 'binance:BTC/USDT:7m:ohlcv', 'binance:BTC/USDT:1m:candles'])(
    'rejects %s naming jobId',
    (bad) => {
      expect(() => parseJobId(bad)).toThrow(ValidationError);
      expect(() => parseJobId(bad)).toThrow(/invalid jobId/);
    },
  );
});

describe('dedup keys', () => {
  const base = { venue: 'binance', channel: 'trades' as const, symbol: 'BTC/USDT', payload: { b: 1, a: [1, 2] } };
  it('prefers message id, then sequence, then a stable hash', () => {
    expect(dedupKey({ ...base, messageId: 'm1', sequence: 5 })).toBe('mid:m1');
    expect(dedupKey({ ...base, sequence: 5 })).toBe('seq:binance:trades:5');
    const h = dedupKey(base);
    expect(h).toMatch(/^hash:[0-9a-f]{16}$/);
    expect(dedupKey({ ...base, payload: { a: [1, 2], b: 1 } })).toBe(h);
    expect(dedupKey({ ...base, payload: { a: [2, 1], b: 1 } })).not.toBe(h);
  });
});
