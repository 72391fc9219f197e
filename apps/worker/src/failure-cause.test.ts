import { MalformedPayloadError, SinkUnavailableError, StoreUnavailableError, TransientError, UnrecoverableError, ValidationError } from '@tickfleet/core';
import { failureCause } from './venue-runner.js';

describe('failureCause', () => {
  it('classifies by error type and transport cause, never by message', () => {
    expect(failureCause(new TransientError('binance', 'klines answered HTTP 503', 503))).toBe('server_error');
    const timeout = Object.assign(new Error('aborted'), { name: 'TimeoutError' });
    expect(failureCause(new TransientError('binance', 'klines timed out', undefined, { cause: timeout }))).toBe('timeout');
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    expect(failureCause(new TransientError('binance', 'klines request failed', undefined, { cause: reset }))).toBe('connection');
    expect(failureCause(new MalformedPayloadError('binance', 'klines response is not JSON', '{"trunc'))).toBe('malformed');
    expect(failureCause(new StoreUnavailableError('SQLite store x stayed locked'))).toBe('store_unavailable');
    // A sink outage (no spool to take the batch) is counted and retried like a store outage.
    expect(failureCause(new SinkUnavailableError('mongodb', 4, 'connection refused'))).toBe('store_unavailable');
    expect(failureCause(new UnrecoverableError('binance', 'Invalid symbol', 400))).toBe('unrecoverable');
    expect(failureCause(new ValidationError('weight', 'a positive integer', 0))).toBe('unrecoverable');
    // Our own consistency checks raise TransientError without a status or transport cause: they
    // spend attempts rather than being outwaited forever.
    expect(failureCause(new TransientError('binance', 'backfill unit without range'))).toBe('other');
    expect(failureCause(new Error('lost the job lock'))).toBe('other');
  });
});
