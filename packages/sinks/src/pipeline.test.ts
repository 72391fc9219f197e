import { PipelineClosedError, SinkUnavailableError } from '@tickfleet/core';
import { tempDir, waitFor, type TempDir } from '@tickfleet/testkit';
import { PipelineMetrics, Pipeline, Spool, SqliteSink } from './index.js';
import { books, candles, trades } from '../test/fixtures/envelopes.js';
import { holdWriteLock } from '../test/fixtures/sqlite-lock.js';

describe('Pipeline', () => {
  let dir: TempDir;
  let sink: SqliteSink;
  let pipeline: Pipeline | undefined;
  beforeEach(() => {
    dir = tempDir('pipeline-');
    sink = new SqliteSink(dir.file('data.db'), { busyTimeoutMs: 20, maxRetries: 1, retryBaseMs: 5, failuresForDegraded: 2 });
  });
  afterEach(async () => {
    await pipeline?.close();
    pipeline = undefined;
    await sink.close();
    dir.remove();
  });

  it('stores pushed records once; the dedup window drops repeats and counts them by venue and channel', async () => {
    const metrics = new PipelineMetrics();
    pipeline = new Pipeline({ sink, metrics, dedup: { windowMs: 60_000, maxKeys: 1000 }, batch: { maxBatchSize: 50, maxBatchAgeMs: 5 } });
    const batch = [...trades(100), ...candles([0, 1, 2])];
    expect(await pipeline.push(batch)).toMatchObject({ accepted: 103, stored: 103, duplicates: 0, spooled: 0, dropped: 0, rejected: [] });
    expect(await pipeline.push([...trades(10), ...trades(5, 100)])).toMatchObject({ accepted: 5, stored: 5, duplicates: 10 });
    expect(await sink.reader.countEnvelopes({})).toBe(105);
    const text = await metrics.registry.metrics();
    expect(text).toContain('tickfleet_dedup_dropped_total{venue="binance",channel="trades"} 10');
    expect(text).toContain('tickfleet_sink_inserted_total{adapter="sqlite"} 108');
    expect(text).toContain('tickfleet_sink_state{adapter="sqlite"} 0');
    expect(text).toMatch(/tickfleet_sink_batch_write_seconds_count\{adapter="sqlite"\} \d+/);
  });

  it('reports the dedup window: off without one; with one its bounds, the keys it holds and the records it dropped', async () => {
    pipeline = new Pipeline({ sink, batch: { maxBatchAgeMs: 5 } });
    expect(pipeline.dedupStatus()).toEqual({ enabled: false });
    await pipeline.close();
    pipeline = new Pipeline({ sink, dedup: { windowMs: 60_000, maxKeys: 8 } });
    await pipeline.push(trades(5));
    await pipeline.push(trades(7));
    expect(pipeline.dedupStatus()).toEqual({ enabled: true, windowMs: 60_000, maxKeys: 8, keys: 7, dropped: 5 });
  });

  it('pushValidated stores envelopes built from validated payloads under the same keys as push, and dedups against them', async () => {
    pipeline = new Pipeline({ sink, dedup: { windowMs: 60_000, maxKeys: 1000 } });
    const batch = [...trades(10), ...candles([0, 1, 2]), ...books(2)];
    expect(await pipeline.pushValidated(batch)).toMatchObject({ accepted: 15, stored: 15, duplicates: 0, rejected: [] });
    // The validating path sees the same keys: all of it is a repeat.
    expect(await pipeline.push(batch)).toMatchObject({ accepted: 0, stored: 0, duplicates: 15 });
    // Trades and books are envelopes; candles live in their own table.
    expect(await sink.reader.countEnvelopes({})).toBe(12);
  });

  it('refuses a push after close with PipelineClosedError and writes nothing', async () => {
    const closed = new Pipeline({ sink, batch: { maxBatchAgeMs: 5 } });
    await closed.push(trades(3));
    await closed.close();
    await expect(closed.push(trades(5, 100))).rejects.toBeInstanceOf(PipelineClosedError);
    expect(await sink.reader.countEnvelopes({})).toBe(3);
  });

  it('without a dedup window, the sink counts repeats as duplicates', async () => {
    pipeline = new Pipeline({ sink, batch: { maxBatchAgeMs: 5 } });
    await pipeline.push(trades(20));
    expect(await pipeline.push(trades(20))).toMatchObject({ stored: 0, duplicates: 20 });
  });

  it('without a dedup window, a repeat within one push is stored once and counted as a duplicate by the sink', async () => {
    const metrics = new PipelineMetrics();
    pipeline = new Pipeline({ sink, metrics, batch: { maxBatchAgeMs: 5 } });
    const batch = [...trades(10), ...trades(4, 3), ...candles([0, 1]), ...candles([1])];
    expect(await pipeline.pushValidated(batch)).toMatchObject({ accepted: 17, stored: 12, duplicates: 5, dropped: 0 });
    expect(await sink.reader.countEnvelopes({})).toBe(10);
    expect(await sink.reader.countCandles({ venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' })).toMatchObject({ count: 2 });
    expect(await metrics.registry.metrics()).toContain('tickfleet_sink_duplicates_total{adapter="sqlite"} 5');
  });

  it('rejects malformed records naming the field, counts and samples them, stores the rest, and keeps running', async () => {
    const metrics = new PipelineMetrics();
    pipeline = new Pipeline({ sink, metrics, batch: { maxBatchAgeMs: 5 }, errors: { perMinute: 2 } });
    const good = trades(4);
    const bad = [
      { ...good[0]!, messageId: 'x1', payload: { ...good[0]!.payload, price: 7 } },
      { ...good[0]!, messageId: 'x2', receivedAtMs: 'now' },
      { ...good[0]!, messageId: 'x3', payload: { ...good[0]!.payload, timeMs: null } },
    ];
    const res = await pipeline.push([good[0], bad[0], good[1], bad[1], good[2], bad[2], good[3]]);
    expect(res.stored).toBe(4);
    expect(res.rejected.map((r) => [r.index, r.error.field])).toEqual([
      [1, 'envelope.payload.price'],
      [3, 'envelope.receivedAtMs'],
      [5, 'envelope.payload.timeMs'],
    ]);
    expect(await sink.reader.countEnvelopes({})).toBe(4);
    // Two samples per venue/channel per minute reach the errors stream; all three are counted.
    expect(await sink.reader.countErrors()).toBe(2);
    expect(await metrics.registry.metrics()).toContain('tickfleet_sink_ingest_errors_total{venue="binance",adapter="sqlite"} 3');
    expect(await pipeline.push(trades(3, 50))).toMatchObject({ stored: 3 });
  });

  it('spools while the sink is unavailable and replays into it when it is back: none lost, none doubled', async () => {
    const metrics = new PipelineMetrics();
    const spool = Spool.open({ dir: dir.file('spool'), maxSegmentBytes: 4096 }, { metrics });
    pipeline = new Pipeline({ sink, spool, metrics, batch: { maxBatchSize: 20, maxBatchAgeMs: 5 }, replay: { retryIntervalMs: 50, batchSize: 50 } });
    await pipeline.push(trades(30));
    const lock = holdWriteLock(dir.file('data.db'));
    const during = await pipeline.push([...trades(200, 30), ...books(10)]);
    expect(during).toMatchObject({ spooled: 210, stored: 0, dropped: 0 });
    expect(sink.state).not.toBe('ok');
    expect(spool.totalBytes).toBeGreaterThan(0);
    let text = await metrics.registry.metrics();
    expect(text).toMatch(/tickfleet_spool_bytes [1-9]\d*/);
    expect(text).toMatch(/tickfleet_sink_state\{adapter="sqlite"\} [12]/);
    // Overlap: records the sink already has come through again during the outage.
    await pipeline.push(trades(10, 25));
    lock.release();
    await waitFor(() => spool.totalBytes === 0 && spool.completeSegments().length === 0, 'spool drained');
    expect(sink.state).toBe('ok');
    expect(await sink.reader.countEnvelopes({ channel: 'trades' })).toBe(230);
    expect(await sink.reader.countEnvelopes({ channel: 'book' })).toBe(10);
    const ids = new Set<string>();
    for await (const e of sink.reader.streamEnvelopes({ channel: 'trades' })) ids.add(e.envelope.payload.tradeId as string);
    expect(ids).toEqual(new Set(Array.from({ length: 230 }, (_, i) => String(i))));
    text = await metrics.registry.metrics();
    expect(text).toContain('tickfleet_spool_replayed_total 220');
    expect(text).toContain('tickfleet_sink_state{adapter="sqlite"} 0');
  });

  it('without a spool, a sink that stays locked fails the push with SinkUnavailableError naming the adapter', async () => {
    pipeline = new Pipeline({ sink, batch: { maxBatchSize: 10, maxBatchAgeMs: 5 } });
    const lock = holdWriteLock(dir.file('data.db'));
    try {
      const err = await pipeline.push(trades(5)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SinkUnavailableError);
      // maxRetries 1: the first attempt and one retry, each timing out on SQLite's busy lock.
      expect(err).toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'sqlite', attempts: 2 });
      expect((err as SinkUnavailableError).reason).toMatch(/locked/);
    } finally {
      lock.release();
    }
    expect(await pipeline.push(trades(5))).toMatchObject({ stored: 5 });
  });

  it('passes backpressure up to the producer when the spool is full under the block policy', async () => {
    const spool = Spool.open({ dir: dir.file('spool'), maxTotalBytes: 2000, maxSegmentBytes: 1000, onFull: 'block' });
    pipeline = new Pipeline({ sink, spool, batch: { maxBatchSize: 10, maxBatchAgeMs: 5, maxPendingRecords: 10 }, replay: { retryIntervalMs: 50 } });
    const lock = holdWriteLock(dir.file('data.db'));
    let done = false;
    const pushing = pipeline.push(trades(40)).then((r) => ((done = true), r));
    await new Promise((r) => setTimeout(r, 300));
    expect(done).toBe(false);
    expect(spool.totalBytes).toBeLessThanOrEqual(2000);
    lock.release();
    expect(await pushing).toMatchObject({ spooled: expect.any(Number), dropped: 0 });
    await waitFor(() => spool.totalBytes === 0, 'spool drained');
    expect(await sink.reader.countEnvelopes({})).toBe(40);
  });
});
