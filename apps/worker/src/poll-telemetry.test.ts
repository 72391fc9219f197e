import { MalformedPayloadError, POLL_ERROR_MESSAGE_MAX, RateLimitedError, TransientError, UnrecoverableError } from '@tickfleet/core';
import { pollErrorClass, PollTelemetry } from './poll-telemetry.js';

const STATE = { activeInstruments: 3, activeVersion: 7, cooldownRemainingMs: 0, inflightLimit: 4, poolSize: 2 };

describe('PollTelemetry', () => {
  it('classifies failures: 429 apart from other 4xx, 5xx, timeouts, the rest', () => {
    const timeout = new TransientError('polymarket', 'request timed out', undefined, { cause: Object.assign(new Error('t'), { name: 'TimeoutError' }) });
    expect(pollErrorClass(new RateLimitedError('polymarket', 0))).toBe('http_429');
    expect(pollErrorClass(new UnrecoverableError('polymarket', 'No orderbook exists', 404))).toBe('http_4xx');
    expect(pollErrorClass(new TransientError('polymarket', 'HTTP 503', 503))).toBe('http_5xx');
    expect(pollErrorClass(timeout)).toBe('timeout');
    expect(pollErrorClass(new MalformedPayloadError('polymarket', 'bad book', '{'))).toBe('other');
  });

  it('counts one interval, keeps at most maxErrorsPerInterval error records with cut messages, and starts over', () => {
    const t = new PollTelemetry({ venue: 'polymarket', workerId: 'w', maxErrorsPerInterval: 2, latencyWindow: 4 });
    for (const latencyMs of [10, 20, 30]) t.record({ symbol: 'a', ok: true, latencyMs });
    t.record({
      symbol: 'b',
      ok: false,
      latencyMs: 40,
      status: 500,
      errorClass: 'http_5xx',
      errorType: 'TransientError',
      message: 'x'.repeat(1000),
      marketId: '1',
    });
    t.record({ symbol: 'c', ok: false, latencyMs: 50, status: 429, errorClass: 'http_429' });
    t.record({ symbol: 'd', ok: false, latencyMs: 60, errorClass: 'timeout' });
    const { stats, errors } = t.flush(0, 1000, STATE);
    expect(stats).toMatchObject({
      submitted: 6,
      ok: 3,
      failed: 3,
      http5xx: 1,
      http429: 1,
      timeouts: 1,
      http4xx: 0,
      otherErrors: 0,
      errorsSampled: 2,
      errorsSuppressed: 1,
    });
    // The rolling window holds the latest 4 latencies (30, 40, 50, 60), not reset by the flush.
    expect(stats).toMatchObject({ p50LatencyMs: 40, p95LatencyMs: 60, ...STATE });
    expect(errors.map((e) => [e.symbol, e.status])).toEqual([
      ['b', 500],
      ['c', 429],
    ]);
    expect(errors[0]!.message).toHaveLength(POLL_ERROR_MESSAGE_MAX);
    expect(t.idle).toBe(true);
    expect(t.flush(1000, 2000, STATE).stats).toMatchObject({ submitted: 0, errorsSampled: 0, p50LatencyMs: 40 });
  });
});
