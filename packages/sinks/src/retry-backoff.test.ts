import { SinkUnavailableError, ValidationError } from '@tickfleet/core';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { openSink, SINK_DEFAULTS, SqliteSink, type SinkRetry } from './index.js';
import { trades } from '../test/fixtures/envelopes.js';
import { holdWriteLock } from '../test/fixtures/sqlite-lock.js';

/**
 * The backoff between a batch's attempts, measured on a real SQLite sink whose file another
 * connection keeps locked: each wait is `retryBaseMs * 2^attempt`, and it is really waited (the
 * next attempt comes no earlier). Only lower bounds on time: a busy machine only makes them longer.
 */
describe('sink retry backoff', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('sink-backoff-')));
  afterEach(() => dir.remove());

  it('waits retryBaseMs * 2^n after failed attempt n, then gives up after maxRetries retries', async () => {
    const path = dir.file('data.db');
    const sink = (await openSink(`sqlite://${path}`, {
      retry: { maxRetries: 3, retryBaseMs: 40, failuresForDegraded: 5 },
      sqlite: { busyTimeoutMs: 10 },
    })) as SqliteSink;
    expect(sink.retry).toEqual({ maxRetries: 3, retryBaseMs: 40, failuresForDegraded: 5 });
    const lock = holdWriteLock(path);
    const retries: Array<SinkRetry & { atMs: number }> = [];
    sink.onRetry((r) => retries.push({ ...r, atMs: performance.now() }));
    try {
      const started = performance.now();
      const err = await sink.write(trades(2)).then(
        () => undefined,
        (e: unknown) => e,
      );
      const endedMs = performance.now();
      expect(err).toBeInstanceOf(SinkUnavailableError);
      expect(err).toMatchObject({ attempts: 4 });
      expect(retries.map(({ attempt, delayMs }) => ({ attempt, delayMs }))).toEqual([
        { attempt: 0, delayMs: 40 },
        { attempt: 1, delayMs: 80 },
        { attempt: 2, delayMs: 160 },
      ]);
      expect(retries.every((r) => (r.error as Error).message.length > 0)).toBe(true);
      // Each wait is spent before the next attempt (whose failure reports the next retry, or ends the write).
      const marks = [...retries.map((r) => r.atMs), endedMs];
      for (let n = 0; n < retries.length; n++) expect(marks[n + 1]! - marks[n]!).toBeGreaterThanOrEqual(retries[n]!.delayMs - 1);
      expect(endedMs - started).toBeGreaterThanOrEqual(40 + 80 + 160 - 1);
      // One exhausted batch: unavailable, not yet degraded (5 needed).
      expect(sink.state).toBe('unavailable');
    } finally {
      lock.release();
      await sink.close();
    }
  });

  it("defaults to the design's 3 retries from 100 ms and degraded after 3 exhausted batches", async () => {
    const sink = new SqliteSink(dir.file('defaults.db'));
    expect(sink.retry).toEqual({ maxRetries: 3, retryBaseMs: 100, failuresForDegraded: 3 });
    expect(sink.retry).toEqual({
      maxRetries: SINK_DEFAULTS.maxRetries,
      retryBaseMs: SINK_DEFAULTS.retryBaseMs,
      failuresForDegraded: SINK_DEFAULTS.failuresForDegraded,
    });
    await sink.close();
  });

  it('refuses retry settings it cannot run with, naming the option', () => {
    expect(() => new SqliteSink(dir.file('bad.db'), { maxRetries: -1 })).toThrow(ValidationError);
    expect(() => new SqliteSink(dir.file('bad.db'), { retryBaseMs: Number.NaN })).toThrow(/invalid retryBaseMs/);
    expect(() => new SqliteSink(dir.file('bad.db'), { failuresForDegraded: 0 })).toThrow(
      /invalid failuresForDegraded: expected a whole number of batches, 1 or more, got 0/,
    );
  });
});
