import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  SpoolFullError,
  SpoolLockedError,
  ValidationError,
  StoreUnavailableError,
  systemClock,
  type Candle,
  type Clock,
  type Envelope,
  type SpoolFullReason,
} from '@tickfleet/core';
import { pidAlive } from './internal/pid-alive.js';
import { encodeFrame, isDiskFull, scanFrames, segmentName, segmentSeq } from './internal/spool-format.js';
import type { PipelineMetrics } from './pipeline-metrics.js';
import type { CandleQuery } from './sink.js';
import type { OnFullPolicy, SpoolOptions } from './spool-options.js';
import { SPOOL_DEFAULTS } from './sink-defaults.js';

const LOCK_FILE = 'spool.lock';

export interface AppendResult {
  /** Per input record: true when appended, false when dropped by the onFull policy. */
  appended: boolean[];
  appendedCount: number;
  droppedCount: number;
}

export interface SpoolRecovery {
  /** Bytes of a partial last record cut from the current segment at open. */
  truncatedBytes: number;
  /** Complete records found in the current segment. */
  keptRecords: number;
}

export interface SpoolSegmentInfo {
  name: string;
  seq: number;
  bytes: number;
}

interface PendingFrame {
  index: number;
  frame: Buffer;
}

/** Open-time range of one candle series in one segment. */
interface SeriesSpan {
  minMs: number;
  maxMs: number;
}

const seriesKey = (venue: string, symbol: string, timeframe: string): string => `${venue}\u0000${symbol}\u0000${timeframe}`;

/**
 * Durable spool: append-only segment files of length-prefixed JSON envelopes. One process
 * writes a directory (a `spool.lock` file holding its pid); the replay worker of that same
 * process reads and deletes complete segments.
 *
 * A record is acknowledged (`appended: true`) only once all of its bytes are written and, with
 * `fsync`, synced. A write the disk refuses (ENOSPC/EDQUOT, possibly after part of it went
 * through) is cut back to the last acknowledged byte, so the segment never holds a torn frame
 * in front of later records; the refused records then follow the `onFull` policy like records
 * over the `maxTotalBytes` cap.
 *
 * Crash safety: at open the current (last) segment is scanned and a partial last record is cut,
 * every complete record kept. Rotation: a new segment starts when the next frame would pass
 * `maxSegmentBytes`; a fresh segment always takes its first record, however large.
 */
export class Spool {
  readonly dir: string;
  readonly maxSegmentBytes: number;
  readonly maxTotalBytes: number;
  readonly onFull: OnFullPolicy;
  readonly blockTimeoutMs: number;
  readonly diskRetryMs: number;
  readonly retryAfterMs: number;
  readonly recovery: SpoolRecovery;
  private readonly fsync: boolean;
  private readonly sizes = new Map<number, number>();
  /** Candle series per segment written by this process; segments found at open are `unindexed`. */
  private readonly candleSpans = new Map<number, Map<string, SeriesSpan>>();
  private readonly unindexed = new Set<number>();
  private readonly deletedListeners: Array<() => void> = [];
  private currentSeq: number;
  private fd: number;
  private total = 0;
  private closed = false;
  private stopWaits = false;
  /** Monotonic time the disk last refused a write; cleared by a successful write or a deleted segment. */
  private diskFullAt: number | undefined;
  /** Set when a refused write's torn tail could not be cut: nothing is appended until it is. */
  private tornAt: number | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private waiters: Array<() => void> = [];

  private constructor(
    options: SpoolOptions,
    private readonly metrics: PipelineMetrics | undefined,
    private readonly clock: Clock,
  ) {
    this.dir = options.dir;
    this.maxSegmentBytes = options.maxSegmentBytes ?? SPOOL_DEFAULTS.maxSegmentBytes;
    this.maxTotalBytes = options.maxTotalBytes ?? SPOOL_DEFAULTS.maxTotalBytes;
    this.onFull = options.onFull ?? SPOOL_DEFAULTS.onFull;
    this.fsync = options.fsync ?? SPOOL_DEFAULTS.fsync;
    this.blockTimeoutMs = options.blockTimeoutMs ?? SPOOL_DEFAULTS.blockTimeoutMs;
    this.diskRetryMs = options.diskRetryMs ?? SPOOL_DEFAULTS.diskRetryMs;
    this.retryAfterMs = options.retryAfterMs ?? SPOOL_DEFAULTS.retryAfterMs;
    mkdirSync(this.dir, { recursive: true });
    lockDir(this.dir, () => this.clock.now() + this.retryAfterMs);
    try {
      for (const s of listSegments(this.dir)) {
        this.sizes.set(s.seq, s.bytes);
        this.total += s.bytes;
        // Records a dead process left: which series they hold is unknown until they are replayed.
        if (s.bytes > 0) this.unindexed.add(s.seq);
      }
      const seqs = [...this.sizes.keys()];
      this.currentSeq = seqs.length ? Math.max(...seqs) : 1;
      this.recovery = this.recoverCurrent();
      this.fd = openSync(join(this.dir, segmentName(this.currentSeq)), 'a');
    } catch (err) {
      unlinkLock(this.dir);
      throw err;
    }
    if (!this.sizes.has(this.currentSeq)) this.sizes.set(this.currentSeq, 0);
    this.publish();
  }

  /**
   * Opens (and recovers) the spool in `options.dir`. Throws SpoolLockedError when another live process
   * holds it, SpoolFullError (naming the directory and the errno) when its disk has no room for
   * the lock file or the segment.
   */
  static open(options: SpoolOptions, extras: { metrics?: PipelineMetrics; clock?: Clock } = {}): Spool {
    const clock = extras.clock ?? systemClock;
    try {
      return new Spool(options, extras.metrics, clock);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      const e = err as NodeJS.ErrnoException;
      throw new SpoolFullError(
        options.dir,
        'disk',
        clock.now() + (options.retryAfterMs ?? SPOOL_DEFAULTS.retryAfterMs),
        `cannot open spool ${options.dir}: no space left on its disk (${e.code} ${e.syscall ?? ''} ${e.path ?? ''})`.replace(/\s+\)/, ')'),
        { cause: err },
      );
    }
  }

  get totalBytes(): number {
    return this.total;
  }

  get currentSegment(): string {
    return segmentName(this.currentSeq);
  }

  /** Why the spool last refused records: `disk` while its disk is known to be full, else `cap`. */
  get fullReason(): SpoolFullReason {
    return this.diskFullAt !== undefined ? 'disk' : 'cap';
  }

  /** Segments that are no longer written (every one but the current), oldest first. */
  completeSegments(): SpoolSegmentInfo[] {
    return [...this.sizes.entries()]
      .filter(([seq]) => seq !== this.currentSeq)
      .sort((a, b) => a[0] - b[0])
      .map(([seq, bytes]) => ({ name: segmentName(seq), seq, bytes }));
  }

  /** Bytes in the current segment. */
  get currentBytes(): number {
    return this.sizes.get(this.currentSeq) ?? 0;
  }

  /**
   * Whether candles of the series with an open time in [fromMs, toMs) may be in the spool (not
   * yet replayed into the sink). Segments left by an earlier process count as holding anything.
   */
  hasCandles(query: CandleQuery): boolean {
    if (this.unindexed.size > 0) return true;
    const key = seriesKey(query.venue, query.symbol, query.timeframe);
    for (const spans of this.candleSpans.values()) {
      const span = spans.get(key);
      if (span && (query.toMs === undefined || span.minMs < query.toMs) && (query.fromMs === undefined || span.maxMs >= query.fromMs)) return true;
    }
    return false;
  }

  /** Calls `listener` after each segment is deleted (its records are in the sink). */
  onSegmentDeleted(listener: () => void): void {
    this.deletedListeners.push(listener);
  }

  /**
   * Appends envelopes in order. Appends are serialized; with `block` (or a non-book record
   * under `drop_book_keep_trades`) a record waits until space frees up, at most
   * `blockTimeoutMs`, then the append fails with SpoolFullError. Records acknowledged before
   * such a failure stay in the spool (replaying them twice is harmless: sinks are idempotent).
   */
  append(envelopes: readonly Envelope[]): Promise<AppendResult> {
    const run = this.chain.then(() => this.appendNow(envelopes));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Closes the current segment so replay may take it, and starts the next. No-op when it is empty. */
  seal(): void {
    if (this.closed || this.currentBytes === 0) return;
    this.rotate();
    this.publish();
  }

  /** The records of a complete segment, parsed; a frame that is not JSON is returned as its text so the sink rejects (and counts) it. */
  readSegment(name: string): unknown[] {
    const { bodies } = scanFrames(readFileSync(join(this.dir, name)));
    return bodies.map((b) => {
      const text = b.toString('utf8');
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    });
  }

  /** Deletes a complete segment whose records are all in the sink, waking appends waiting for space. */
  deleteSegment(name: string): void {
    const seq = segmentSeq(name);
    if (seq === undefined || seq === this.currentSeq)
      throw new ValidationError('segment', `a complete segment of spool ${this.dir} (not the one being written)`, name);
    unlinkSync(join(this.dir, name));
    this.total -= this.sizes.get(seq) ?? 0;
    this.sizes.delete(seq);
    this.candleSpans.delete(seq);
    this.unindexed.delete(seq);
    // The disk has room again (at least this segment's bytes): the next write tries it at once.
    this.diskFullAt = undefined;
    this.publish();
    this.wake();
    for (const l of this.deletedListeners) l();
  }

  /** Makes appends waiting for space fail now (StoreUnavailableError) instead of at their timeout: the owner is shutting down. */
  stopWaiting(): void {
    this.stopWaits = true;
    this.wake();
  }

  /** Finishes pending appends (waiting ones fail with StoreUnavailableError), closes the file and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake();
    await this.chain;
    // With `fsync` every acknowledged append was synced already; without it this is best effort.
    try {
      fsyncSync(this.fd);
    } catch {
      // Nothing acknowledged depends on it.
    }
    closeSync(this.fd);
    if (this.currentBytes === 0 && this.sizes.size > 0) {
      // An empty current segment carries nothing; keep the directory tidy (already gone is as good).
      try {
        unlinkSync(join(this.dir, this.currentSegment));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      this.sizes.delete(this.currentSeq);
    }
    unlinkLock(this.dir);
  }

  private async appendNow(envelopes: readonly Envelope[]): Promise<AppendResult> {
    if (this.closed) throw new StoreUnavailableError(`spool ${this.dir} is closed`);
    const deadline = this.clock.monotonic() + this.blockTimeoutMs;
    const appended = new Array<boolean>(envelopes.length).fill(false);
    let appendedCount = 0;
    let droppedCount = 0;
    let pending: PendingFrame[] = [];
    let pendingBytes = 0;
    const drop = (index: number): void => {
      const env = envelopes[index]!;
      droppedCount += 1;
      this.metrics?.spoolDropped.inc({ venue: env.venue, channel: env.channel });
    };
    // Writes the pending frames; on a full disk applies the policy to them (drop, or wait and retry).
    const commit = async (): Promise<void> => {
      while (pending.length > 0) {
        if (
          this.write(
            pending.map((p) => p.frame),
            pendingBytes,
          )
        ) {
          for (const p of pending) appended[p.index] = true;
          appendedCount += pending.length;
          this.metrics?.spoolAppended.inc(pending.length);
          this.publish();
          this.index(pending.map((p) => envelopes[p.index]!));
          pending = [];
          pendingBytes = 0;
          return;
        }
        pending = pending.filter((p) => {
          if (!this.droppable(envelopes[p.index]!)) return true;
          drop(p.index);
          pendingBytes -= p.frame.length;
          return false;
        });
        if (pending.length > 0) await this.waitForSpace(deadline, 'disk');
      }
    };

    for (let i = 0; i < envelopes.length; i++) {
      const env = envelopes[i]!;
      const frame = encodeFrame(JSON.stringify(env));
      // While the disk is known to be full, droppable records are dropped without a doomed write.
      if (this.droppable(env) && this.diskKnownFull()) {
        drop(i);
        continue;
      }
      let dropped = false;
      while (this.total + pendingBytes + frame.length > this.maxTotalBytes && this.total + pendingBytes > 0) {
        if (this.droppable(env)) {
          dropped = true;
          break;
        }
        await commit();
        if (this.total + frame.length > this.maxTotalBytes && this.total > 0) {
          this.publish();
          await this.waitForSpace(deadline, 'cap');
        }
      }
      if (dropped) {
        drop(i);
        continue;
      }
      if (this.currentBytes + pendingBytes > 0 && this.currentBytes + pendingBytes + frame.length > this.maxSegmentBytes) {
        await commit();
        if (this.currentBytes > 0) this.rotate();
      }
      pending.push({ index: i, frame });
      pendingBytes += frame.length;
    }
    await commit();
    this.publish();
    return { appended, appendedCount, droppedCount };
  }

  /**
   * Writes frames to the current segment completely (looping over short writes) and fsyncs.
   * Returns false when the disk refused them: the segment is cut back to its size before the
   * call, so no part of them stays. Other I/O errors are cut back the same way and thrown.
   */
  private write(frames: Buffer[], bytes: number): boolean {
    const seq = this.currentSeq;
    if (this.tornAt !== undefined) {
      try {
        ftruncateSync(this.fd, this.tornAt);
        this.tornAt = undefined;
      } catch (err) {
        if (isDiskFull(err)) return this.refused();
        throw this.ioError('cut a torn record from', err);
      }
    }
    const before = fstatSync(this.fd).size;
    const buf = frames.length === 1 ? frames[0]! : Buffer.concat(frames, bytes);
    let off = 0;
    try {
      while (off < buf.length) {
        const n = writeSync(this.fd, buf, off, buf.length - off);
        // A regular file only writes nothing when it has no room left: refused like ENOSPC.
        if (n <= 0) break;
        off += n;
      }
      if (off === buf.length && this.fsync) fsyncSync(this.fd);
    } catch (err) {
      this.cutBack(before);
      if (isDiskFull(err)) return this.refused();
      throw this.ioError('write to', err);
    }
    if (off < buf.length) {
      this.cutBack(before);
      return this.refused();
    }
    this.sizes.set(seq, before + bytes);
    this.total += bytes;
    this.diskFullAt = undefined;
    return true;
  }

  private refused(): false {
    this.diskFullAt = this.clock.monotonic();
    return false;
  }

  /** Cuts a refused write's partial bytes; if even that fails, no append goes after them until it succeeds. */
  private cutBack(size: number): void {
    try {
      ftruncateSync(this.fd, size);
      if (this.fsync) fsyncSync(this.fd);
    } catch {
      this.tornAt = size;
    }
  }

  private ioError(what: string, err: unknown): StoreUnavailableError {
    const e = err as NodeJS.ErrnoException;
    return new StoreUnavailableError(`spool could not ${what} ${join(this.dir, this.currentSegment)}: ${e.code ?? e.message}`, { cause: err });
  }

  private droppable(env: Envelope): boolean {
    return this.onFull === 'drop_all' || (this.onFull === 'drop_book_keep_trades' && env.channel === 'book');
  }

  private diskKnownFull(): boolean {
    return this.diskFullAt !== undefined && this.clock.monotonic() - this.diskFullAt < this.diskRetryMs;
  }

  private index(envelopes: readonly Envelope[]): void {
    let spans = this.candleSpans.get(this.currentSeq);
    for (const env of envelopes) {
      if (env.channel !== 'candles') continue;
      const c = env.payload as Candle;
      spans ??= new Map();
      const key = seriesKey(env.venue, env.symbol, c.timeframe);
      const span = spans.get(key);
      if (!span) spans.set(key, { minMs: c.openTime, maxMs: c.openTime });
      else {
        span.minMs = Math.min(span.minMs, c.openTime);
        span.maxMs = Math.max(span.maxMs, c.openTime);
      }
    }
    if (spans) this.candleSpans.set(this.currentSeq, spans);
  }

  /**
   * Waits until a segment is deleted, the disk may have room again (`disk`: every
   * `diskRetryMs`) or the deadline; past the deadline the append fails with SpoolFullError.
   */
  private async waitForSpace(deadline: number, reason: SpoolFullReason): Promise<void> {
    this.throwIfStopped();
    const remaining = deadline - this.clock.monotonic();
    if (remaining <= 0) {
      throw new SpoolFullError(this.dir, reason, this.clock.now() + this.retryAfterMs);
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, reason === 'disk' ? Math.min(remaining, this.diskRetryMs) : remaining);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
    this.throwIfStopped();
  }

  private throwIfStopped(): void {
    if (this.closed || this.stopWaits) throw new StoreUnavailableError(`spool ${this.dir} closed while an append was waiting for space`);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Moves appends to a new segment; when the disk cannot even create the file, stays on the current one. */
  private rotate(): void {
    const next = this.currentSeq + 1;
    let fd: number;
    try {
      fd = openSync(join(this.dir, segmentName(next)), 'a');
    } catch (err) {
      if (isDiskFull(err)) return;
      throw err;
    }
    try {
      if (this.fsync) fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
    }
    this.fd = fd;
    this.currentSeq = next;
    this.sizes.set(next, 0);
  }

  private recoverCurrent(): SpoolRecovery {
    const path = join(this.dir, segmentName(this.currentSeq));
    let buf: Buffer;
    try {
      buf = readFileSync(path);
    } catch {
      return { truncatedBytes: 0, keptRecords: 0 };
    }
    const { bodies, completeBytes } = scanFrames(buf);
    if (completeBytes < buf.length) {
      truncateSync(path, completeBytes);
      this.total -= buf.length - completeBytes;
      this.sizes.set(this.currentSeq, completeBytes);
    }
    return { truncatedBytes: buf.length - completeBytes, keptRecords: bodies.length };
  }

  private publish(): void {
    this.metrics?.spoolBytes.set(this.total);
    this.metrics?.spoolSegments.set([...this.sizes.values()].filter((b) => b > 0).length);
  }

  /** Receive time of the oldest spooled record, or null when the spool is empty. */
  oldestReceivedAtMs(): number | null {
    return oldestReceivedAtMs(this.dir);
  }

  /** Age of the oldest spooled record at the spool's clock. */
  oldestAgeMs(): number | null {
    const t = this.oldestReceivedAtMs();
    return t === null ? null : Math.max(0, this.clock.now() - t);
  }
}

/** Segment files of a spool directory, oldest first. Safe to call while a writer is active. */
export function listSegments(dir: string): SpoolSegmentInfo[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: SpoolSegmentInfo[] = [];
  for (const name of names) {
    const seq = segmentSeq(name);
    if (seq === undefined) continue;
    out.push({ name, seq, bytes: statSync(join(dir, name)).size });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

export interface SpoolInspection {
  segments: number;
  bytes: number;
  /** Complete records in all segments. */
  records: number;
  /** Bytes after the last complete record of each segment, summed: a torn record a writer left. */
  tornBytes: number;
}

/** Reads every segment of a spool directory as a fresh process would (read-only; safe while a writer is active). */
export function inspectSpool(dir: string): SpoolInspection {
  const out: SpoolInspection = { segments: 0, bytes: 0, records: 0, tornBytes: 0 };
  for (const s of listSegments(dir)) {
    let buf: Buffer;
    try {
      buf = readFileSync(join(dir, s.name));
    } catch {
      // Replayed and deleted since it was listed.
      continue;
    }
    const { bodies, completeBytes } = scanFrames(buf);
    out.segments += 1;
    out.bytes += buf.length;
    out.records += bodies.length;
    out.tornBytes += buf.length - completeBytes;
  }
  return out;
}

/** receivedAtMs of the first complete record of the oldest non-empty segment. */
export function oldestReceivedAtMs(dir: string): number | null {
  for (const s of listSegments(dir)) {
    if (s.bytes === 0) continue;
    const fd = openSync(join(dir, s.name), 'r');
    try {
      const head = Buffer.alloc(Math.min(s.bytes, 64 * 1024));
      readSyncFully(fd, head);
      let { bodies } = scanFrames(head);
      if (bodies.length === 0) bodies = scanFrames(readFileSync(join(dir, s.name))).bodies;
      const first = bodies[0];
      if (!first) continue;
      const t = (JSON.parse(first.toString('utf8')) as { receivedAtMs?: unknown }).receivedAtMs;
      if (typeof t === 'number') return t;
    } catch {
      continue;
    } finally {
      closeSync(fd);
    }
  }
  return null;
}

function readSyncFully(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) {
    const n = readSync(fd, buf, off, buf.length - off, off);
    if (n === 0) break;
    off += n;
  }
}

/** Takes `spool.lock` for this process; `retryAtMs` dates the SpoolFullError of a disk too full for the pid. */
function lockDir(dir: string, retryAtMs: () => number): void {
  const path = join(dir, LOCK_FILE);
  const pid = Buffer.from(String(process.pid));
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && pidAlive(holder)) {
        throw new SpoolLockedError(dir, holder);
      }
      // A lock left by a dead process (or an earlier Spool of ours that was not closed): take it over.
      unlinkSync(path);
      continue;
    }
    let written: number;
    try {
      written = writeSync(fd, pid);
    } catch (err) {
      // An empty lock file would be taken for a dead process's: leave none behind.
      closeSync(fd);
      unlinkSync(path);
      throw Object.assign(err as Error, { path });
    }
    if (written !== pid.length) {
      // A short write of a few bytes to a fresh file: its disk is full.
      closeSync(fd);
      unlinkSync(path);
      throw new SpoolFullError(dir, 'disk', retryAtMs(), `cannot open spool ${dir}: no space left on its disk (ENOSPC write ${path})`);
    }
    closeSync(fd);
    return;
  }
  throw new SpoolLockedError(dir, undefined);
}

function unlinkLock(dir: string): void {
  try {
    unlinkSync(join(dir, LOCK_FILE));
  } catch {
    // Already gone.
  }
}
