import { calculateObjectSize, type Document, Long } from 'bson';
import { CommandError } from './command-error.js';

/** MongoDB's default size of a find/aggregate first batch, in documents. */
export const DEFAULT_FIRST_BATCH = 101;

/** A batch never exceeds this many BSON bytes (16 MiB, MongoDB's reply budget), unless one document alone does. */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

/** Idle cursors are closed after 10 minutes, MongoDB's `cursorTimeoutMillis` default. */
const CURSOR_IDLE_MS = 10 * 60 * 1000;

interface OpenCursor {
  readonly ns: string;
  readonly docs: Document[];
  position: number;
  lastUsedMs: number;
}

/** One batch plus the id to continue from (0 when the cursor is exhausted). */
export interface Batch {
  readonly docs: Document[];
  readonly id: Long;
}

/**
 * Server-side cursors. A query materialises its full result when it runs (the command is
 * atomic), and getMore hands it out in batches.
 */
export class CursorRegistry {
  private readonly cursors = new Map<number, OpenCursor>();
  private nextId = Math.floor(Math.random() * 1_000_000) + 1;

  /** The first batch of `docs`; opens a cursor when more remain and `singleBatch` is false. */
  open(ns: string, docs: Document[], batchSize: number | undefined, singleBatch: boolean): Batch {
    this.sweep();
    const first = takeBatch(docs, 0, batchSize ?? DEFAULT_FIRST_BATCH);
    if (singleBatch || first.length >= docs.length) return { docs: first, id: Long.ZERO };
    const id = this.nextId++;
    this.cursors.set(id, { ns, docs, position: first.length, lastUsedMs: Date.now() });
    return { docs: first, id: Long.fromNumber(id) };
  }

  /** The next batch of an open cursor (`batchSize` 0/undefined: as many as fit in 16 MiB). */
  next(id: number, ns: string, batchSize: number | undefined): Batch {
    const cursor = this.cursors.get(id);
    if (!cursor) throw new CommandError('CursorNotFound', `cursor id ${id} not found`);
    if (cursor.ns !== ns) {
      throw new CommandError('BadValue', `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`);
    }
    const docs = takeBatch(cursor.docs, cursor.position, batchSize && batchSize > 0 ? batchSize : Number.MAX_SAFE_INTEGER);
    cursor.position += docs.length;
    cursor.lastUsedMs = Date.now();
    if (cursor.position >= cursor.docs.length) {
      this.cursors.delete(id);
      return { docs, id: Long.ZERO };
    }
    return { docs, id: Long.fromNumber(id) };
  }

  /** Closes cursors; returns which ids were open and which were unknown. */
  kill(ids: number[]): { killed: number[]; notFound: number[] } {
    const killed: number[] = [];
    const notFound: number[] = [];
    for (const id of ids) (this.cursors.delete(id) ? killed : notFound).push(id);
    return { killed, notFound };
  }

  /** Closes every cursor over `ns` (collection dropped). */
  killNamespace(ns: string): void {
    for (const [id, cursor] of this.cursors) if (cursor.ns === ns || cursor.ns.startsWith(`${ns}.`)) this.cursors.delete(id);
  }

  get openCount(): number {
    return this.cursors.size;
  }

  private sweep(): void {
    const cutoff = Date.now() - CURSOR_IDLE_MS;
    for (const [id, cursor] of this.cursors) if (cursor.lastUsedMs < cutoff) this.cursors.delete(id);
  }
}

function takeBatch(docs: Document[], from: number, batchSize: number): Document[] {
  const out: Document[] = [];
  let bytes = 0;
  for (let i = from; i < docs.length && out.length < batchSize; i++) {
    const doc = docs[i] as Document;
    bytes += calculateObjectSize(doc);
    if (out.length > 0 && bytes > MAX_BATCH_BYTES) break;
    out.push(doc);
  }
  return out;
}
