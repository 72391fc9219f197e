import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { JsonlPartitionLockedError, systemClock, ValidationError, VenueName, type Clock } from '@tickfleet/core';
import { pidAlive } from '../internal/pid-alive.js';
import type { RetryOptions } from '../internal/sink-health.js';
import { RetryingSink } from '../internal/retrying-sink.js';
import { sleep } from '../internal/sleep.js';
import type { KeyedEnvelope } from '../records.js';
import type { ErrorSample, Sink } from '../sink.js';
import { JSONL_SINK_DEFAULTS } from '../sink-defaults.js';

const DAY_MS = 86_400_000;
const OPEN_SUFFIX = '.jsonl.open';
const LOCK_FILE = '.writer.lock';
const WANT_FILE = '.writer.want';
/** A lease unused this long is released. */
const LEASE_IDLE_MS = 20;
/**
 * A lease held this long is released after its next append if another process waits for the lock
 * (its `.writer.want` exists), and not taken again for LEASE_PAUSE_MS, so that process gets its turn;
 * with nobody waiting it is renewed.
 */
const LEASE_MAX_MS = 250;
const LEASE_PAUSE_MS = 60;
/** Longest pause between two looks at a lock another process holds. */
const LOCK_POLL_MAX_MS = 40;
/** A lock file still without a pid after this long was left by a writer that died creating it. */
const EMPTY_LOCK_STALE_MS = 2000;
const DATE_DIR_RE = /^date=\d{4}-\d{2}-\d{2}$/;
/** Venue directory of error samples that name no venue (venue names start with a letter, so this never collides). */
export const NO_VENUE_DIR = '_none';
/** Directory of a venue's state snapshots (`<root>/<venue>/state/<name>.json`), beside its streams. */
const STATE_DIR = 'state';
const STATE_NAME_RE = /^[a-z0-9][a-z0-9_.-]*\.json$/;
/** Where the design and its users' tools read order books: `<venue>/orderbooks/`, not the channel's name `book`. */
const BOOK_STREAM_DIR = 'orderbooks';
/** The stream directory book snapshots had before they followed the design (moved by `data migrate-jsonl`). */
const OLD_BOOK_STREAM_DIR = 'book';

/** The stream directory of a channel: `orderbooks` for book snapshots, the channel's own name otherwise. */
export function streamDir(channel: string): string {
  return channel === 'book' ? BOOK_STREAM_DIR : channel;
}

/** A state snapshot {@link JsonlSink.writeState} keeps: versioned, so an older one never replaces a newer. */
export interface VersionedState {
  version: number;
}

export interface JsonlSinkOptions extends RetryOptions {
  /** How often written data is fsynced. @defaultValue {@link JSONL_SINK_DEFAULTS.fsyncIntervalMs} */
  fsyncIntervalMs?: number;
  /** Partitions (venue, stream, day) kept open with their key sets; the least recently used beyond this is closed. @defaultValue {@link JSONL_SINK_DEFAULTS.maxOpenPartitions} */
  maxOpenPartitions?: number;
  /** How long a batch waits for a partition another process is appending to. @defaultValue {@link JSONL_SINK_DEFAULTS.lockTimeoutMs} */
  lockTimeoutMs?: number;
  clock?: Clock;
}

interface PartitionId {
  venue: string;
  stream: string;
  date: string;
}

function partitionId({ venue, stream, date }: PartitionId): string {
  return `${venue}/${stream}/${date}`;
}

interface Partition {
  dir: string;
  date: string;
  fd: number | undefined;
  openPath: string | undefined;
  keys: Set<string>;
  /** Bytes of each file (by name without `.open`) already read into `keys`, up to its last complete line. */
  readOffsets: Map<string, number>;
  dirReady: boolean;
  /** The lease under which `keys` was last brought up to date, and its append count then. */
  lease: Lease | undefined;
  leaseWrites: number;
  dirty: boolean;
  lastUsed: number;
}

/**
 * Raw append-only sink: `<root>/<venue>/<stream>/date=YYYY-MM-DD/part-<pid>-<ms>.jsonl`, one JSON line
 * per record (`key` first), `stream` = channel (book snapshots: `orderbooks`; error samples: `errors`),
 * day = the UTC date of the record's `receivedAtMs` (so a replayed record lands beside its first copy
 * and the partition's key set finds it). The layout is the order-book design's, one tree per venue,
 * with the venue's state snapshots under `<root>/<venue>/state/` ({@link JsonlSink.writeState}).
 *
 * A file being written is named `….jsonl.open`; when the UTC day it holds is over (or at close)
 * it is fsynced and renamed to `….jsonl` in one atomic rename, so readers globbing `*.jsonl`
 * only ever see complete files. Files of crashed processes are finalized the same way (partial
 * last line cut) at the next start. Writes are fsynced every `fsyncIntervalMs`.
 *
 * Idempotency, across processes too: a batch is appended to a partition under the partition's writer
 * lock (`.writer.lock`, created with O_EXCL and holding the pid; a dead holder's is taken over). Under
 * the lock the sink first reads what other writers appended since it last looked (each file from the
 * offset it had read to), so a record another process stored is found and not written again. The lock
 * is held for that check and one append, never across an await. No DataReader: counting or exporting
 * needs an index this format does not have.
 *
 * A root in the earlier layout (`<root>/<stream>/date=…`) is refused with the command that migrates it
 * (`tickfleet data migrate-jsonl <root>`), so no record is stored once in each layout.
 */
/**
 * A partition's writer lock as this process holds it: taken once, used by every append (of every sink
 * of this process) until it has been idle LEASE_IDLE_MS or held LEASE_MAX_MS, so an append costs no
 * lock syscalls while the lease lasts.
 */
interface Lease {
  path: string;
  acquiredAt: number;
  /** Appends made under it by any sink of this process (a sink that did not make the last one catches up). */
  writes: number;
  timer: NodeJS.Timeout | undefined;
}

const leases = new Map<string, Lease>();
/** Lock path -> until when this process leaves it to others after releasing a long-held lease. */
const paused = new Map<string, number>();

function releaseLease(lease: Lease): void {
  if (leases.get(lease.path) !== lease) return;
  leases.delete(lease.path);
  clearTimeout(lease.timer);
  unlinkQuiet(lease.path);
}

export class JsonlSink extends RetryingSink implements Sink {
  readonly adapter = 'jsonl' as const;
  readonly reader = undefined;
  private readonly partitions = new Map<string, Partition>();
  private readonly clock: Clock;
  private readonly timer: NodeJS.Timeout;
  private readonly maxOpenPartitions: number;
  private readonly lockTimeoutMs: number;
  private closed = false;

  constructor(
    readonly dir: string,
    options: JsonlSinkOptions = {},
  ) {
    super('jsonl', options);
    this.clock = options.clock ?? systemClock;
    this.maxOpenPartitions = options.maxOpenPartitions ?? JSONL_SINK_DEFAULTS.maxOpenPartitions;
    this.lockTimeoutMs = options.lockTimeoutMs ?? JSONL_SINK_DEFAULTS.lockTimeoutMs;
    mkdirSync(dir, { recursive: true });
    // Old trees are refused: records stored once in each layout would be stored twice.
    const legacy = [...legacyStreams(dir).map((d) => `${d}/date=…`), ...oldBookDirs(dir).map((d) => `${d}/date=…`)];
    if (legacy.length > 0) {
      throw new ValidationError(
        'jsonl sink root',
        `the per-venue layout <root>/<venue>/<stream>/date=YYYY-MM-DD (books under orderbooks/); migrate it first with \`tickfleet data migrate-jsonl ${dir}\``,
        `${dir} (earlier layout: ${legacy.join(', ')})`,
      );
    }
    for (const partition of partitionDirs(dir)) finalizeOrphans(partition);
    this.timer = setInterval(() => this.sync(), options.fsyncIntervalMs ?? JSONL_SINK_DEFAULTS.fsyncIntervalMs);
    this.timer.unref();
  }

  protected async storeBatch(valid: KeyedEnvelope[]): Promise<number> {
    const groups = new Map<string, { where: PartitionId; rows: KeyedEnvelope[] }>();
    for (const row of valid) {
      const where = { venue: row.envelope.venue, stream: streamDir(row.envelope.channel), date: utcDate(row.envelope.receivedAtMs) };
      const id = partitionId(where);
      const group = groups.get(id);
      if (group) group.rows.push(row);
      else groups.set(id, { where, rows: [row] });
    }
    let inserted = 0;
    for (const { where, rows } of groups.values()) {
      const seen = new Set<string>();
      inserted += await this.underLock(where, (p) => {
        const lines: string[] = [];
        const keys: string[] = [];
        for (const { key, envelope } of rows) {
          if (p.keys.has(key) || seen.has(key)) continue;
          seen.add(key);
          lines.push(`${JSON.stringify({ key, ...envelope })}\n`);
          keys.push(key);
        }
        // One write per partition; keys count as stored only once their bytes are written.
        if (lines.length > 0) this.appendLines(p, lines.join(''));
        for (const k of keys) p.keys.add(k);
        return keys.length;
      });
    }
    return inserted;
  }

  async writeErrors(samples: readonly ErrorSample[]): Promise<void> {
    if (samples.length === 0) return;
    const byPartition = new Map<string, { where: PartitionId; lines: string[] }>();
    for (const s of samples) {
      const where = { venue: s.venue ?? NO_VENUE_DIR, stream: 'errors', date: utcDate(s.atMs) };
      const id = partitionId(where);
      const group = byPartition.get(id);
      if (group) group.lines.push(`${JSON.stringify(s)}\n`);
      else byPartition.set(id, { where, lines: [`${JSON.stringify(s)}\n`] });
    }
    for (const { where, lines } of byPartition.values()) await this.underLock(where, (p) => this.appendLines(p, lines.join('')));
  }

  /**
   * Writes `doc` as `<root>/<venue>/state/<name>` in one atomic step (a temporary file, fsynced, then
   * renamed over the old one), so a reader sees the old snapshot or the new one, never half. A file
   * there with a later `version` is kept (returns false): of two writers, the later version stays.
   */
  async writeState(venue: string, name: string, doc: VersionedState): Promise<boolean> {
    if (!STATE_NAME_RE.test(name)) throw new ValidationError('state file name', 'a lower-case file name ending in .json', name);
    // A venue name, so the file never lands outside the venue's tree.
    if (!VenueName.safeParse(venue).success) throw new ValidationError('venue', 'a venue name', venue);
    const dir = join(this.dir, venue, STATE_DIR);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, name);
    const tmp = join(dir, `.${name}.${process.pid}.tmp`);
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, `${JSON.stringify(doc)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // The check and the rename are not one step: two writers interleaving here can leave the older
    // version for the moment, until the next write (each discovery writes the set it swapped in).
    if (storedVersion(path) > doc.version) {
      unlinkQuiet(tmp);
      return false;
    }
    renameSync(tmp, path);
    return true;
  }

  /** fsyncs every file written since the last sync and finalizes files of days that are over. */
  sync(): void {
    const today = utcDate(this.clock.now());
    for (const [id, p] of this.partitions) {
      if (p.fd !== undefined && p.dirty) {
        fsyncSync(p.fd);
        p.dirty = false;
      }
      if (p.date < today) this.retire(id, p);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const [id, p] of this.partitions) this.retire(id, p);
  }

  /**
   * Runs `fn` holding the partition's writer lock (this process's lease on it, taken if needed), after
   * reading what other writers appended since `p` was last brought up to date. `fn` is synchronous: no
   * other sink can append between the catch-up and the append.
   */
  private async underLock<T>(where: PartitionId, fn: (p: Partition) => T): Promise<T> {
    const lease = await this.lease(this.partition(where));
    // The partition as it is now: while this waited, sync() may have finalized and retired the one it had.
    const p = this.partition(where);
    if (p.lease !== lease || p.leaseWrites !== lease.writes) this.catchUp(p);
    let result: T;
    try {
      result = fn(p);
    } finally {
      lease.writes += 1;
    }
    p.lease = lease;
    p.leaseWrites = lease.writes;
    if (performance.now() - lease.acquiredAt >= LEASE_MAX_MS && existsSync(join(p.dir, WANT_FILE))) {
      releaseLease(lease);
      paused.set(lease.path, performance.now() + LEASE_PAUSE_MS);
    } else {
      if (performance.now() - lease.acquiredAt >= LEASE_MAX_MS) lease.acquiredAt = performance.now();
      clearTimeout(lease.timer);
      lease.timer = setTimeout(() => releaseLease(lease), LEASE_IDLE_MS);
      lease.timer.unref();
    }
    return result;
  }

  /** This process's lease on the partition's lock: the current one, or the lock taken (waiting while another live process holds it). */
  private async lease(p: Partition): Promise<Lease> {
    if (!p.dirReady) {
      mkdirSync(p.dir, { recursive: true });
      p.dirReady = true;
    }
    const path = join(p.dir, LOCK_FILE);
    const started = performance.now();
    let waitMs = 1;
    const want = join(p.dir, WANT_FILE);
    for (;;) {
      const held = leases.get(path);
      if (held) return held;
      const pausedUntil = paused.get(path) ?? 0;
      const holder = performance.now() < pausedUntil ? undefined : tryLock(path);
      if (holder === null) {
        paused.delete(path);
        // Whoever asked is served or asks again at its next look (a dead waiter's request ends here).
        unlinkQuiet(want);
        const lease: Lease = { path, acquiredAt: performance.now(), writes: 0, timer: undefined };
        leases.set(path, lease);
        return lease;
      }
      // Tell the holder someone waits, so it hands the lock over after LEASE_MAX_MS.
      if (holder !== undefined && !existsSync(want)) writeFileSync(want, String(process.pid));
      const waited = performance.now() - started;
      if (holder !== undefined && waited >= this.lockTimeoutMs) throw new JsonlPartitionLockedError(p.dir, holder, Math.round(waited));
      await sleep(holder === undefined ? Math.max(1, pausedUntil - performance.now()) : waitMs);
      if (holder !== undefined) waitMs = Math.min(LOCK_POLL_MAX_MS, waitMs * 2);
    }
  }

  /** Reads the lines other writers appended to the partition since it was last read (complete lines only). */
  private catchUp(p: Partition): void {
    const own = p.openPath === undefined ? undefined : stem(p.openPath.slice(p.dir.length + 1));
    for (const name of readdirSync(p.dir)) {
      if (!name.endsWith('.jsonl') && !name.endsWith(OPEN_SUFFIX)) continue;
      const id = stem(name);
      if (id === own) continue;
      const from = p.readOffsets.get(id) ?? 0;
      // A file finalized by its writer between readdir and open is read under its final name.
      const read = readLinesFrom(join(p.dir, name), from) ?? readLinesFrom(join(p.dir, `${id}.jsonl`), from);
      if (read === undefined) continue;
      for (const key of read.keys) p.keys.add(key);
      p.readOffsets.set(id, read.endOffset);
    }
  }

  private appendLines(p: Partition, text: string): void {
    if (p.fd === undefined) {
      p.openPath = join(p.dir, `part-${process.pid}-${uniqueFileMs(this.clock.now())}${OPEN_SUFFIX}`);
      p.fd = openSync(p.openPath, 'a');
    }
    writeSync(p.fd, text);
    p.dirty = true;
    p.lastUsed = this.clock.monotonic();
  }

  private partition(where: PartitionId): Partition {
    const id = partitionId(where);
    let p = this.partitions.get(id);
    if (!p) {
      const { venue, stream, date } = where;
      const dir = join(this.dir, venue, stream, `date=${date}`);
      p = {
        dir,
        date,
        fd: undefined,
        openPath: undefined,
        keys: new Set(),
        readOffsets: new Map(),
        dirReady: false,
        lease: undefined,
        leaseWrites: 0,
        dirty: false,
        lastUsed: this.clock.monotonic(),
      };
      this.partitions.set(id, p);
      this.evict();
    }
    return p;
  }

  private evict(): void {
    while (this.partitions.size > this.maxOpenPartitions) {
      let oldest: [string, Partition] | undefined;
      for (const e of this.partitions) if (!oldest || e[1].lastUsed < oldest[1].lastUsed) oldest = e;
      if (!oldest) return;
      this.retire(...oldest);
    }
  }

  /**
   * Finalizes a partition's file and lets go of its writer lock: a partition retired while this
   * process still held its lease (a day that ended, or evicted) would otherwise leave the lock to the
   * lease's idle timer, which does not keep a closing process alive, so the lock file stayed behind.
   * Another sink of this process sharing the lease takes the lock again at its next write.
   */
  private retire(id: string, p: Partition): void {
    this.finalize(p);
    if (p.lease) releaseLease(p.lease);
    this.partitions.delete(id);
  }

  private finalize(p: Partition): void {
    if (p.fd === undefined || p.openPath === undefined) return;
    fsyncSync(p.fd);
    closeSync(p.fd);
    renameSync(p.openPath, p.openPath.slice(0, -'.open'.length));
    p.fd = undefined;
    p.openPath = undefined;
  }
}

export function utcDate(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

let lastFileMs = 0;

/**
 * The `<ms>` of a new file name: the clock, or one more than the last one this process used, so two
 * sinks of one process on one root never share a file (each skips its own file when catching up).
 */
function uniqueFileMs(nowMs: number): number {
  lastFileMs = Math.max(nowMs, lastFileMs + 1);
  return lastFileMs;
}

/** `part-1-2` of `part-1-2.jsonl` or `part-1-2.jsonl.open`: a file keeps its identity across its final rename. */
function stem(name: string): string {
  return name.endsWith(OPEN_SUFFIX) ? name.slice(0, -OPEN_SUFFIX.length) : name.slice(0, -'.jsonl'.length);
}

/**
 * Creates the lock holding this pid; returns null when taken, else the live holder's pid (-1 when it
 * is not known yet). A lock of a dead process, or of this one that no lease of this process accounts
 * for (left by a sink that was not closed), is taken over.
 */
function tryLock(path: string): number | null {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder: number;
    let ageMs: number;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
      ageMs = Date.now() - statSync(path).mtimeMs;
    } catch {
      continue; // released between our create and our read
    }
    if (!Number.isSafeInteger(holder) || holder <= 0) {
      // No pid yet: a holder between its create and its write, unless it died there long ago.
      if (ageMs < EMPTY_LOCK_STALE_MS) return -1;
    } else if (holder !== process.pid && pidAlive(holder)) {
      return holder;
    }
    unlinkQuiet(path);
  }
  return -1;
}

export function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Keys of the complete lines of `path` from byte `from`, and the offset after the last complete line; undefined when the file is gone. */
function readLinesFrom(path: string, from: number): { keys: string[]; endOffset: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const size = statSync(path).size;
    if (size <= from) return { keys: [], endOffset: from };
    const buf = Buffer.alloc(size - from);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, from + off);
      if (n === 0) break;
      off += n;
    }
    const end = buf.lastIndexOf(0x0a, off - 1) + 1;
    const keys: string[] = [];
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      if (!line) continue;
      try {
        const key = (JSON.parse(line) as { key?: unknown }).key;
        if (typeof key === 'string') keys.push(key);
      } catch {
        // Not a record line (a crashed writer's torn line is cut at its finalization).
      }
    }
    return { keys, endOffset: from + end };
  } finally {
    closeSync(fd);
  }
}

/** The `version` of the state snapshot at `path`; -1 when there is none (or it cannot be read). */
function storedVersion(path: string): number {
  try {
    const version = (JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version;
    return typeof version === 'number' ? version : -1;
  } catch {
    return -1;
  }
}

/** Every `date=` partition directory of a per-venue root: `<root>/<venue>/<stream>/date=…`. */
export function partitionDirs(root: string): string[] {
  const out: string[] = [];
  for (const venue of subdirs(root)) {
    for (const stream of subdirs(join(root, venue))) {
      for (const part of subdirs(join(root, venue, stream))) if (DATE_DIR_RE.test(part)) out.push(join(root, venue, stream, part));
    }
  }
  return out;
}

/** `<venue>/book` directories holding `date=` partitions: book snapshots stored before they went to `orderbooks/`. */
export function oldBookDirs(root: string): string[] {
  return subdirs(root)
    .map((venue) => join(venue, OLD_BOOK_STREAM_DIR))
    .filter((d) => subdirs(join(root, d)).some((p) => DATE_DIR_RE.test(p)));
}

/** Top-level directories of `root` in the earlier layout: they hold `date=` partitions themselves. */
export function legacyStreams(root: string): string[] {
  return subdirs(root).filter((d) => subdirs(join(root, d)).some((p) => DATE_DIR_RE.test(p)));
}

function subdirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => statSync(join(dir, name)).isDirectory());
}

/** Finalizes `.open` files left by processes that are gone: cut a partial last line, then rename. */
export function finalizeOrphans(dir: string): void {
  for (const name of readdirSync(dir)) {
    const m = /^part-(\d+)-\d+\.jsonl\.open$/.exec(name);
    if (!m || Number(m[1]) === process.pid || pidAlive(Number(m[1]))) continue;
    const path = join(dir, name);
    const text = readFileSync(path);
    const end = text.lastIndexOf(0x0a) + 1;
    if (end < text.length) truncateSync(path, end);
    try {
      renameSync(path, path.slice(0, -'.open'.length));
    } catch (err) {
      // Another starting process finalized it first.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
