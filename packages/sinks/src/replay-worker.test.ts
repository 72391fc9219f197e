import { tempDir, waitFor, type TempDir } from '@tickfleet/testkit';
import { SinkUnavailableError, type Envelope } from '@tickfleet/core';
import { PipelineMetrics, ReplayWorker, Spool, SqliteSink } from './index.js';
import { trades } from '../test/fixtures/envelopes.js';
import { holdWriteLock } from '../test/fixtures/sqlite-lock.js';
import { observed } from '../test/fixtures/observed-sink.js';

const tradeCount = async (sink: SqliteSink): Promise<number> => sink.reader.countEnvelopes({ channel: 'trades' });

describe('ReplayWorker', () => {
  let dir: TempDir;
  let sink: SqliteSink;
  let spool: Spool;
  beforeEach(async () => {
    dir = tempDir('replay-');
    sink = new SqliteSink(dir.file('data.db'), { busyTimeoutMs: 20, maxRetries: 1, retryBaseMs: 5 });
    spool = Spool.open({ dir: dir.file('spool') });
    // Three segments: trades 0-9, 10-19, 20-29.
    for (const from of [0, 10, 20]) {
      await spool.append(trades(10, from));
      spool.seal();
    }
  });
  afterEach(async () => {
    await spool.close();
    await sink.close();
    dir.remove();
  });

  it('replays the oldest complete segment first and deletes each after its records are written', async () => {
    await spool.append(trades(5, 30)); // the current segment: sealed by the drain itself
    const seen = observed(sink);
    const metrics = new PipelineMetrics();
    const worker = new ReplayWorker(spool, seen, { batchSize: 10, metrics });
    const r = await worker.drain();
    expect(r).toMatchObject({ segments: 4, records: 35, inserted: 35, duplicates: 0 });
    expect(seen.firsts.map((e) => (e as Envelope).payload.tradeId)).toEqual(['0', '10', '20', '30']);
    expect(spool.completeSegments()).toEqual([]);
    expect(spool.totalBytes).toBe(0);
    expect(await tradeCount(sink)).toBe(35);
    expect(await metrics.registry.metrics()).toContain('tickfleet_spool_replayed_total 35');
  });

  it('never takes the segment being written; it is sealed only once everything older is in', async () => {
    await spool.append(trades(5, 30));
    const current = spool.currentSegment;
    expect(current).toBe('spool_000004.dat');
    expect(spool.completeSegments().map((s) => s.name)).not.toContain(current);
    const seen = observed(sink);
    const r = await new ReplayWorker(spool, seen, { batchSize: 100 }).drain();
    expect(r.records).toBe(35);
    expect(seen.firsts.map((e) => (e as Envelope).payload.tradeId)).toEqual(['0', '10', '20', '30']);
    // Appends now go to a fresh segment.
    expect(spool.currentSegment).toBe('spool_000005.dat');
  });

  it('deletes nothing while the sink fails, then drains when it is back', async () => {
    const lock = holdWriteLock(dir.file('data.db'));
    const before = spool.completeSegments();
    const worker = new ReplayWorker(spool, sink, { batchSize: 4 });
    const failed = await worker.drain();
    expect(failed.error).toBeInstanceOf(SinkUnavailableError);
    expect(failed.error).toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'sqlite' });
    expect(failed.segments).toBe(0);
    expect(spool.completeSegments()).toEqual(before);
    expect(sink.state).toBe('unavailable');
    lock.release();
    const ok = await worker.drain();
    expect(ok).toMatchObject({ segments: 3, records: 30 });
    expect(sink.state).toBe('ok');
    expect(await tradeCount(sink)).toBe(30);
  });

  it('stops cleanly mid-segment, keeps that segment, and a second replay leaves one copy of each record', async () => {
    // A pace far longer than the wait below: the worker cannot get past its first batches before it is
    // stopped, however slowly this machine polls (stop ends the pause at once).
    const worker = new ReplayWorker(spool, sink, { batchSize: 3, paceMs: 10_000 });
    worker.start();
    await waitFor(async () => (await tradeCount(sink)) >= 3, 'first replayed batch', { intervalMs: 10 });
    await worker.stop();
    expect(worker.running).toBe(false);
    const partial = await tradeCount(sink);
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(10);
    expect(spool.completeSegments().map((s) => s.name)).toEqual(['spool_000001.dat', 'spool_000002.dat', 'spool_000003.dat']);

    // The restarted worker replays segment 1 from its start; the sink absorbs the repeats.
    const again = new ReplayWorker(spool, sink, { batchSize: 10 });
    const r = await again.drain();
    expect(r).toMatchObject({ segments: 3, records: 30, duplicates: partial, inserted: 30 - partial });
    expect(await tradeCount(sink)).toBe(30);
  });
});
