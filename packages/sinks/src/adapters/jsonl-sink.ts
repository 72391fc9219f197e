import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock, type Clock } from '@tickfleet/core';
import { pidAlive } from '../internal/pid-alive.js';
import type { RetryOptions } from '../internal/sink-health.js';
import { RetryingSink } from '../internal/retrying-sink.js';
import type { KeyedEnvelope } from '../records.js';
import type { ErrorSample, Sink } from '../sink.js';

const DAY_MS = 86_400_000;
const OPEN_SUFFIX = '.jsonl.open';

export interface JsonlSinkOptions extends RetryOptions {
  /** How often written data is fsynced. @defaultValue 1000 */
  fsyncIntervalMs?: number;
  /** Partitions (stream, day) kept open with their key sets; the least recently used beyond this is closed. @defaultValue 8 */
  maxOpenPartitions?: number;
  clock?: Clock;
}

interface Partition {
  dir: string;
  date: string;
  fd: number | undefined;
  openPath: string | undefined;
  keys: Set<string>;
  dirty: boolean;
  lastUsed: number;
}

/**
 * Raw append-only sink: `dir/<stream>/date=YYYY-MM-DD/part-<pid>-<ms>.jsonl`, one JSON line per
 * record (`key` first), `stream` = channel, day = the UTC date of the record's `receivedAtMs`
 * (so a replayed record lands beside its first copy and the partition's key set finds it).
 *
 * A file being written is named `….jsonl.open`; when the UTC day it holds is over (or at close)
 * it is fsynced and renamed to `….jsonl` in one atomic rename, so readers globbing `*.jsonl`
 * only ever see complete files. Files of crashed processes are finalized the same way (partial
 * last line cut) at the next start. Writes are fsynced every `fsyncIntervalMs`.
 *
 * Idempotency: each partition's keys are loaded from its files when first touched, so writing a
 * batch twice or replaying a segment twice stores each record once. Processes writing the same
 * partition concurrently do not see each other's in-flight keys: share a SQLite or MongoDB sink
 * for that. No DataReader: counting or exporting needs an index this format does not have.
 */
export class JsonlSink extends RetryingSink implements Sink {
  readonly adapter = 'jsonl' as const;
  readonly reader = undefined;
  private readonly partitions = new Map<string, Partition>();
  private readonly clock: Clock;
  private readonly timer: NodeJS.Timeout;
  private readonly maxOpenPartitions: number;
  private closed = false;

  constructor(
    readonly dir: string,
    options: JsonlSinkOptions = {},
  ) {
    super('jsonl', options);
    this.clock = options.clock ?? systemClock;
    this.maxOpenPartitions = options.maxOpenPartitions ?? 8;
    mkdirSync(dir, { recursive: true });
    finalizeOrphans(dir);
    this.timer = setInterval(() => this.sync(), options.fsyncIntervalMs ?? 1000);
    this.timer.unref();
  }

  protected async storeBatch(valid: KeyedEnvelope[]): Promise<number> {
    return this.append(valid);
  }

  async writeErrors(samples: readonly ErrorSample[]): Promise<void> {
    if (samples.length === 0) return;
    const byDate = new Map<string, string[]>();
    for (const s of samples) {
      const date = utcDate(s.atMs);
      byDate.set(date, [...(byDate.get(date) ?? []), `${JSON.stringify(s)}\n`]);
    }
    for (const [date, lines] of byDate) this.appendLines(this.partition('errors', date), lines.join(''));
  }

  /** fsyncs every file written since the last sync and finalizes files of days that are over. */
  sync(): void {
    const today = utcDate(this.clock.now());
    for (const [id, p] of this.partitions) {
      if (p.fd !== undefined && p.dirty) {
        fsyncSync(p.fd);
        p.dirty = false;
      }
      if (p.date < today) {
        this.finalize(p);
        this.partitions.delete(id);
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const p of this.partitions.values()) this.finalize(p);
    this.partitions.clear();
  }

  private append(rows: KeyedEnvelope[]): number {
    const groups = new Map<Partition, { lines: string[]; keys: string[] }>();
    for (const { key, envelope } of rows) {
      const p = this.partition(envelope.channel, utcDate(envelope.receivedAtMs));
      if (p.keys.has(key)) continue;
      const g = groups.get(p) ?? { lines: [], keys: [] };
      if (g.keys.includes(key)) continue;
      g.lines.push(`${JSON.stringify({ key, ...envelope })}\n`);
      g.keys.push(key);
      groups.set(p, g);
    }
    let inserted = 0;
    for (const [p, g] of groups) {
      // One write per partition; keys count as stored only once their bytes are written.
      this.appendLines(p, g.lines.join(''));
      for (const k of g.keys) p.keys.add(k);
      inserted += g.keys.length;
    }
    return inserted;
  }

  private appendLines(p: Partition, text: string): void {
    if (p.fd === undefined) {
      mkdirSync(p.dir, { recursive: true });
      p.openPath = join(p.dir, `part-${process.pid}-${this.clock.now()}${OPEN_SUFFIX}`);
      p.fd = openSync(p.openPath, 'a');
    }
    writeSync(p.fd, text);
    p.dirty = true;
    p.lastUsed = this.clock.monotonic();
  }

  private partition(stream: string, date: string): Partition {
    const id = `${stream}/${date}`;
    let p = this.partitions.get(id);
    if (!p) {
      const dir = join(this.dir, stream, `date=${date}`);
      p = { dir, date, fd: undefined, openPath: undefined, keys: loadKeys(dir), dirty: false, lastUsed: this.clock.monotonic() };
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
      this.finalize(oldest[1]);
      this.partitions.delete(oldest[0]);
    }
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

function loadKeys(dir: string): Set<string> {
  const keys = new Set<string>();
  if (!existsSync(dir)) return keys;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.jsonl') && !name.endsWith(OPEN_SUFFIX)) continue;
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      try {
        const key = (JSON.parse(line) as { key?: unknown }).key;
        if (typeof key === 'string') keys.add(key);
      } catch {
        // A partial last line from a crash: not a stored record.
      }
    }
  }
  return keys;
}

/** Finalizes `.open` files left by processes that are gone: cut a partial last line, then rename. */
function finalizeOrphans(root: string): void {
  for (const stream of readdirSync(root)) {
    const streamDir = join(root, stream);
    if (!statSync(streamDir).isDirectory()) continue;
    for (const part of readdirSync(streamDir)) {
      const dir = join(streamDir, part);
      if (!statSync(dir).isDirectory()) continue;
      for (const name of readdirSync(dir)) {
        const m = /^part-(\d+)-\d+\.jsonl\.open$/.exec(name);
        if (!m || Number(m[1]) === process.pid || pidAlive(Number(m[1]))) continue;
        const path = join(dir, name);
        const text = readFileSync(path);
        const end = text.lastIndexOf(0x0a) + 1;
        if (end < text.length) truncateSync(path, end);
        renameSync(path, path.slice(0, -'.open'.length));
      }
    }
  }
}
