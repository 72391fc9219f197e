import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SpoolFullError, type Envelope } from '@tickfleet/core';
import { Pipeline, PipelineMetrics, Spool, SqliteSink, listSegments } from './index.js';
import { books, trades } from '../test/fixtures/envelopes.js';
import { holdWriteLock } from '../test/fixtures/sqlite-lock.js';
import { mountTmpfs, tmpfsUnsupported, type Tmpfs } from '../test/fixtures/tmpfs.js';

const unsupported = tmpfsUnsupported();
if (unsupported) process.stderr.write(`SKIPPED spool disk-full tests: ${unsupported}\n`);
const describeDisk = unsupported ? describe.skip : describe;

/** Padded trades: big frames, so a few hundred KiB of spool fill quickly. */
const bigTrades = (n: number, from = 0): Envelope[] => trades(n, from).map((e) => ({ ...e, payload: { ...e.payload, pad: 'p'.repeat(400) } }));

/** What a fresh process would read back: every complete record of every segment, and the bytes of any torn tail. */
function readBack(dir: string): { records: Envelope[]; tornBytes: number } {
  const reader = Spool.open({ dir });
  const records: Envelope[] = [];
  try {
    reader.seal();
    for (const s of reader.completeSegments()) records.push(...(reader.readSegment(s.name) as Envelope[]));
    return { records, tornBytes: reader.recovery.truncatedBytes };
  } finally {
    void reader.close();
  }
}

describeDisk('Spool on a full disk (real tmpfs)', () => {
  let fs: Tmpfs;
  beforeEach(() => (fs = mountTmpfs(512 * 1024)));
  afterEach(() => fs.unmount());

  it('a write the disk cuts short is not acknowledged: appended == readable, no torn frame, drops counted (drop_all)', async () => {
    const dir = join(fs.path, 'spool');
    const metrics = new PipelineMetrics();
    const spool = Spool.open({ dir, onFull: 'drop_all' }, { metrics });
    const first = await spool.append(bigTrades(50));
    expect(first.appendedCount).toBe(50);
    // Room for a part of the next batch only: the kernel writes what fits, then refuses (ENOSPC).
    fs.fill(60 * 1024);
    const input = bigTrades(3000, 50);
    const res = await spool.append(input);
    expect(res.appendedCount + res.droppedCount).toBe(3000);
    expect(res.droppedCount).toBeGreaterThan(0);
    expect(res.appended.filter(Boolean).length).toBe(res.appendedCount);
    expect(spool.fullReason).toBe('disk');
    // The spool's own size accounting matches the bytes on disk.
    expect(spool.totalBytes).toBe(listSegments(dir).reduce((n, s) => n + s.bytes, 0));
    await spool.close();

    const { records, tornBytes } = readBack(dir);
    expect(tornBytes).toBe(0);
    const acknowledged = [...bigTrades(50), ...input.filter((_, i) => res.appended[i])];
    expect(records).toEqual(acknowledged);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`tickfleet_spool_dropped_total{venue="binance",channel="trades"} ${res.droppedCount}`);
  });

  it('block: a full disk refuses the append after blockTimeoutMs (SpoolFullError, nothing kept) and waits for space while it lasts', async () => {
    const dir = join(fs.path, 'spool');
    const spool = Spool.open({ dir, onFull: 'block', blockTimeoutMs: 400, diskRetryMs: 50, retryAfterMs: 2000 });
    await spool.append(bigTrades(20));
    const before = statSync(join(dir, spool.currentSegment)).size;
    fs.fill(30 * 1024);
    const err = await spool.append(bigTrades(500, 20)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SpoolFullError);
    expect(err).toMatchObject({ code: 'E_SPOOL_FULL', reason: 'disk', dir, retryable: true });
    // The part of the batch that fitted was cut back: the segment holds exactly the first 20 records.
    expect(statSync(join(dir, spool.currentSegment)).size).toBe(before);

    fs.free();
    await spool.close();

    // With a deadline far off, an append waits while the disk is full and goes through once space
    // returns. (A deadline of its own: the 400 ms one above could pass on a busy machine before
    // the test frees the disk.)
    const again = Spool.open({ dir, onFull: 'block', blockTimeoutMs: 120_000, diskRetryMs: 50 });
    fs.fill(0);
    let settled = false;
    const waiting = again.append(bigTrades(100, 600)).then((r) => ((settled = true), r));
    // Ground truth that it met the full disk, rather than a wait of some milliseconds.
    while (again.fullReason !== 'disk') await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 150)); // a few of its 50 ms retries
    expect(settled).toBe(false);
    fs.free();
    const res = await waiting;
    expect(res.appendedCount).toBe(100);
    await again.close();
    const { records, tornBytes } = readBack(dir);
    expect(tornBytes).toBe(0);
    expect(records).toEqual([...bigTrades(20), ...bigTrades(100, 600)]);
  });

  it('drop_book_keep_trades on a full disk: book snapshots are dropped, trades wait for space', async () => {
    const dir = join(fs.path, 'spool');
    const spool = Spool.open({ dir, onFull: 'drop_book_keep_trades', blockTimeoutMs: 10_000, diskRetryMs: 50 });
    fs.fill(0);
    const bookRes = await spool.append(books(5));
    expect(bookRes).toMatchObject({ appendedCount: 0, droppedCount: 5 });
    let settled = false;
    const tradesRes = spool.append(bigTrades(10)).then((r) => ((settled = true), r));
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    fs.free();
    expect((await tradesRes).appendedCount).toBe(10);
    await spool.close();
    expect(readBack(dir).records).toEqual(bigTrades(10));
  });

  it('sink down and spool disk full: push rejects with SpoolFullError (not a plain ENOSPC), nothing acknowledged; works again once space returns', async () => {
    const sink = new SqliteSink(join(fs.path, 'data.db'), { busyTimeoutMs: 20, maxRetries: 0 });
    const spool = Spool.open({ dir: join(fs.path, 'spool'), onFull: 'block', blockTimeoutMs: 300, diskRetryMs: 50 });
    const pipeline = new Pipeline({ sink, spool, batch: { maxBatchAgeMs: 5 }, replay: false });
    const lock = holdWriteLock(join(fs.path, 'data.db'));
    try {
      fs.fill(0);
      await expect(pipeline.push(bigTrades(50))).rejects.toMatchObject({ code: 'E_SPOOL_FULL', reason: 'disk', retryable: true });
      expect(spool.totalBytes).toBe(0);
      fs.free();
      expect(await pipeline.push(bigTrades(50))).toMatchObject({ spooled: 50, dropped: 0 });
    } finally {
      lock.release();
      await pipeline.close();
      await sink.close();
    }
  });

  it('opening a spool on a full disk fails with one SpoolFullError naming the directory, and leaves no lock file', () => {
    const dir = join(fs.path, 'spool');
    fs.fill(0);
    let err: unknown;
    try {
      Spool.open({ dir });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SpoolFullError);
    expect((err as SpoolFullError).message).toContain(dir);
    expect((err as SpoolFullError).message).toMatch(/ENOSPC/);
    expect(existsSync(join(dir, 'spool.lock')) && statSync(join(dir, 'spool.lock')).size === 0).toBe(false);
    fs.free();
    const spool = Spool.open({ dir });
    expect(readdirSync(dir)).toContain('spool.lock');
    void spool.close();
  });
});
