import { appendFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpoolLockedError, ValidationError, type Envelope } from '@tickfleet/core';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { PipelineMetrics, Spool, listSegments } from './index.js';
import { books, trades } from '../test/fixtures/envelopes.js';

const frameBytes = (e: Envelope): number => 4 + Buffer.byteLength(JSON.stringify(e));

describe('Spool', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('spool-')));
  afterEach(() => dir.remove());

  it('round-trips envelopes through a segment, in order', async () => {
    const spool = Spool.open({ dir: dir.path });
    const input = [...trades(20), ...books(3)];
    const res = await spool.append(input);
    expect(res).toMatchObject({ appendedCount: 23, droppedCount: 0 });
    expect(spool.totalBytes).toBe(input.reduce((n, e) => n + frameBytes(e), 0));
    spool.seal();
    const [seg] = spool.completeSegments();
    expect(seg!.name).toBe('spool_000001.dat');
    expect(spool.readSegment(seg!.name)).toEqual(input);
    expect(spool.currentSegment).toBe('spool_000002.dat');
    await spool.close();
    // Reopening finds the same records, nothing truncated.
    const again = Spool.open({ dir: dir.path });
    // The empty current segment was removed at close, so the last segment is current again.
    expect(again.recovery).toEqual({ truncatedBytes: 0, keptRecords: 23 });
    expect(again.readSegment('spool_000001.dat')).toEqual(input);
    await again.close();
  });

  it('rotates when the next frame would pass maxSegmentBytes; a fresh segment takes an oversized first record', async () => {
    const input = trades(10);
    const one = frameBytes(input[0]!);
    const spool = Spool.open({ dir: dir.path, maxSegmentBytes: one * 3 + 2 });
    await spool.append(input);
    spool.seal();
    const sizes = spool.completeSegments().map((s) => spool.readSegment(s.name).length);
    expect(sizes).toEqual([3, 3, 3, 1]);
    expect(spool.completeSegments().every((s) => s.bytes <= one * 3 + 2)).toBe(true);
    await spool.close();

    const tiny = tempDir('spool-');
    const small = Spool.open({ dir: tiny.path, maxSegmentBytes: 10 });
    await small.append(trades(2));
    small.seal();
    expect(small.completeSegments().map((s) => small.readSegment(s.name).length)).toEqual([1, 1]);
    await small.close();
    tiny.remove();
  });

  it('recovers a segment truncated mid-record: complete records kept, the partial one cut', async () => {
    const input = trades(5);
    const spool = Spool.open({ dir: dir.path });
    await spool.append(input);
    await spool.close();
    const path = join(dir.path, 'spool_000001.dat');
    const full = statSync(path).size;
    // Cut the last record in the middle of its body, as a crash during the write would.
    truncateSync(path, full - 7);
    const reopened = Spool.open({ dir: dir.path });
    expect(reopened.recovery).toEqual({ truncatedBytes: frameBytes(input[4]!) - 7, keptRecords: 4 });
    expect(statSync(path).size).toBe(full - frameBytes(input[4]!));
    // New appends follow the last complete record.
    await reopened.append(trades(1, 100));
    reopened.seal();
    expect(reopened.readSegment('spool_000001.dat')).toEqual([...input.slice(0, 4), ...trades(1, 100)]);
    await reopened.close();

    // A torn header (fewer than 4 bytes) is cut as well.
    const d2 = tempDir('spool-');
    const s2 = Spool.open({ dir: d2.path });
    await s2.append(trades(2));
    await s2.close();
    appendFileSync(join(d2.path, 'spool_000001.dat'), Buffer.from([0x10, 0x00]));
    const r2 = Spool.open({ dir: d2.path });
    expect(r2.recovery).toEqual({ truncatedBytes: 2, keptRecords: 2 });
    await r2.close();
    d2.remove();
  });

  describe('total cap', () => {
    const cap = (records: Envelope[]): number => records.reduce((n, e) => n + frameBytes(e), 0);

    it('drop_all drops every record past the cap and counts it by venue and channel', async () => {
      const metrics = new PipelineMetrics();
      const first = trades(5);
      const spool = Spool.open({ dir: dir.path, maxTotalBytes: cap(first) + 10, onFull: 'drop_all' }, { metrics });
      const res = await spool.append([...first, ...trades(2, 5), ...books(2)]);
      expect(res.appended).toEqual([true, true, true, true, true, false, false, false, false]);
      expect(res.droppedCount).toBe(4);
      expect(spool.totalBytes).toBeLessThanOrEqual(cap(first) + 10);
      const text = await metrics.registry.metrics();
      expect(text).toContain('tickfleet_spool_dropped_total{venue="binance",channel="trades"} 2');
      expect(text).toContain('tickfleet_spool_dropped_total{venue="polymarket",channel="book"} 2');
      await spool.close();
    });

    it('drop_book_keep_trades drops book snapshots and blocks trades until replay frees space', async () => {
      const first = trades(4);
      const spool = Spool.open({ dir: dir.path, maxTotalBytes: cap(first) + 10, maxSegmentBytes: cap(first.slice(0, 2)), onFull: 'drop_book_keep_trades' });
      await spool.append(first);
      const books1 = await spool.append(books(2));
      expect(books1.appended).toEqual([false, false]);
      let settled = false;
      const blocked = spool.append(trades(1, 10)).then((r) => ((settled = true), r));
      await new Promise((r) => setTimeout(r, 100));
      expect(settled).toBe(false);
      // Replay of the oldest complete segment frees space; the blocked trade goes in.
      spool.deleteSegment(spool.completeSegments()[0]!.name);
      expect((await blocked).appended).toEqual([true]);
      await spool.close();
    });

    it('block waits for space (backpressure) and fails the wait when the spool closes', async () => {
      const first = trades(4);
      const spool = Spool.open({ dir: dir.path, maxTotalBytes: cap(first) + 10, maxSegmentBytes: cap(first.slice(0, 2)), onFull: 'block' });
      await spool.append(first);
      let settled = false;
      const blocked = spool.append(trades(2, 20)).then((r) => ((settled = true), r));
      await new Promise((r) => setTimeout(r, 100));
      expect(settled).toBe(false);
      spool.deleteSegment('spool_000001.dat');
      expect((await blocked).appended).toEqual([true, true]);
      const waiting = spool.append(trades(10, 30));
      await new Promise((r) => setTimeout(r, 50));
      await spool.close();
      await expect(waiting).rejects.toMatchObject({ code: 'E_STORE_UNAVAILABLE' });
    });
  });

  it('refuses to delete the segment being written (or a name that is no segment), naming it', async () => {
    const spool = Spool.open({ dir: dir.path });
    await spool.append(trades(2));
    const current = spool.currentSegment;
    expect(() => spool.deleteSegment(current)).toThrow(ValidationError);
    expect(() => spool.deleteSegment(current)).toThrow(
      `invalid segment: expected a complete segment of spool ${dir.path} (not the one being written), got "${current}"`,
    );
    expect(() => spool.deleteSegment('spool.lock')).toThrow(ValidationError);
    expect(listSegments(dir.path).map((s) => s.name)).toEqual([current]);
    await spool.close();
  });

  it('lets one live process write a directory', async () => {
    const spool = Spool.open({ dir: dir.path });
    writeFileSync(join(dir.path, 'spool.lock'), String(process.ppid));
    let locked: unknown;
    try {
      Spool.open({ dir: dir.path });
    } catch (err) {
      locked = err;
    }
    expect(locked).toBeInstanceOf(SpoolLockedError);
    expect(locked).toMatchObject({ code: 'E_SPOOL_LOCKED', dir: dir.path, holderPid: process.ppid, retryable: false });
    expect((locked as Error).message).toBe(`spool ${dir.path} is locked by pid ${process.ppid}, a live process that writes it`);
    writeFileSync(join(dir.path, 'spool.lock'), String(process.pid));
    await spool.close();
    expect(readdirSync(dir.path)).not.toContain('spool.lock');
    expect(listSegments(dir.path)).toEqual([]);
  });
});
