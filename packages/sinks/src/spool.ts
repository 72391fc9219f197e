import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync, truncateSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, StoreUnavailableError, systemClock, type Clock, type Envelope } from '@tickfleet/core';
import { pidAlive } from './internal/pid-alive.js';
import { encodeFrame, scanFrames, segmentName, segmentSeq } from './internal/spool-format.js';
import type { PipelineMetrics } from './pipeline-metrics.js';
import type { OnFullPolicy, SpoolOptions } from './spool-options.js';

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

/**
 * Durable spool: append-only segment files of length-prefixed JSON envelopes. One process
 * writes a directory (a `spool.lock` file holding its pid); the replay worker of that same
 * process reads and deletes complete segments.
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
  readonly recovery: SpoolRecovery;
  private readonly fsync: boolean;
  private readonly sizes = new Map<number, number>();
  private currentSeq: number;
  private fd: number;
  private total = 0;
  private closed = false;
  private chain: Promise<unknown> = Promise.resolve();
  private waiters: Array<() => void> = [];

  private constructor(
    options: SpoolOptions,
    private readonly metrics: PipelineMetrics | undefined,
    private readonly clock: Clock,
  ) {
    this.dir = options.dir;
    this.maxSegmentBytes = options.maxSegmentBytes ?? 64 * 1024 * 1024;
    this.maxTotalBytes = options.maxTotalBytes ?? 1024 * 1024 * 1024;
    this.onFull = options.onFull ?? 'block';
    this.fsync = options.fsync ?? true;
    mkdirSync(this.dir, { recursive: true });
    lockDir(this.dir);
    for (const s of listSegments(this.dir)) {
      this.sizes.set(s.seq, s.bytes);
      this.total += s.bytes;
    }
    const seqs = [...this.sizes.keys()];
    this.currentSeq = seqs.length ? Math.max(...seqs) : 1;
    this.recovery = this.recoverCurrent();
    this.fd = openSync(join(this.dir, segmentName(this.currentSeq)), 'a');
    if (!this.sizes.has(this.currentSeq)) this.sizes.set(this.currentSeq, 0);
    this.publish();
  }

  /** Opens (and recovers) the spool in `options.dir`; throws ConfigError when another live process holds it. */
  static open(options: SpoolOptions, extras: { metrics?: PipelineMetrics; clock?: Clock } = {}): Spool {
    return new Spool(options, extras.metrics, extras.clock ?? systemClock);
  }

  get totalBytes(): number {
    return this.total;
  }

  get currentSegment(): string {
    return segmentName(this.currentSeq);
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
   * Appends envelopes in order. Appends are serialized; with `block` (or a non-book record
   * under `drop_book_keep_trades`) a record waits until replay frees space.
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
    if (seq === undefined || seq === this.currentSeq) throw new RangeError(`not a complete spool segment: ${name}`);
    unlinkSync(join(this.dir, name));
    this.total -= this.sizes.get(seq) ?? 0;
    this.sizes.delete(seq);
    this.publish();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Finishes pending appends (waiting ones fail with StoreUnavailableError), closes the file and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w();
    await this.chain;
    if (this.fsync) fsyncSync(this.fd);
    closeSync(this.fd);
    if (this.currentBytes === 0 && this.sizes.size > 0) {
      // An empty current segment carries nothing; keep the directory tidy.
      unlinkSync(join(this.dir, this.currentSegment));
      this.sizes.delete(this.currentSeq);
    }
    unlinkSync(join(this.dir, LOCK_FILE));
  }

  private async appendNow(envelopes: readonly Envelope[]): Promise<AppendResult> {
    if (this.closed) throw new StoreUnavailableError('spool closed while an append was waiting for space');
    const appended: boolean[] = [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let appendedCount = 0;
    let droppedCount = 0;
    const flush = (): void => {
      if (pendingBytes === 0) return;
      writeSync(this.fd, pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes));
      if (this.fsync) fsyncSync(this.fd);
      this.sizes.set(this.currentSeq, this.currentBytes + pendingBytes);
      this.total += pendingBytes;
      pending = [];
      pendingBytes = 0;
    };
    for (const env of envelopes) {
      const frame = encodeFrame(JSON.stringify(env));
      let dropped = false;
      while (this.total + pendingBytes + frame.length > this.maxTotalBytes && this.total + pendingBytes > 0) {
        if (this.onFull === 'drop_all' || (this.onFull === 'drop_book_keep_trades' && env.channel === 'book')) {
          dropped = true;
          break;
        }
        flush();
        this.publish();
        await this.waitForSpace();
        if (this.closed) throw new StoreUnavailableError('spool closed while an append was waiting for space');
      }
      if (dropped) {
        appended.push(false);
        droppedCount += 1;
        this.metrics?.spoolDropped.inc({ venue: env.venue, channel: env.channel });
        continue;
      }
      if (this.currentBytes + pendingBytes > 0 && this.currentBytes + pendingBytes + frame.length > this.maxSegmentBytes) {
        flush();
        this.rotate();
      }
      pending.push(frame);
      pendingBytes += frame.length;
      appended.push(true);
      appendedCount += 1;
    }
    flush();
    this.metrics?.spoolAppended.inc(appendedCount);
    this.publish();
    return { appended, appendedCount, droppedCount };
  }

  private waitForSpace(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private rotate(): void {
    if (this.fsync) fsyncSync(this.fd);
    closeSync(this.fd);
    this.currentSeq += 1;
    this.fd = openSync(join(this.dir, segmentName(this.currentSeq)), 'a');
    this.sizes.set(this.currentSeq, 0);
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

function lockDir(dir: string): void {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && pidAlive(holder)) {
        throw new ConfigError('spoolDir', `a spool directory no other live process writes (${dir} is held by pid ${holder})`);
      }
      // A lock left by a dead process (or an earlier Spool of ours that was not closed): take it over.
      unlinkSync(path);
    }
  }
  throw new ConfigError('spoolDir', `a lockable spool directory (${dir})`);
}

