import { type Document, ObjectId, UUID } from 'bson';
import { canonicalKey, formatValue, isPlainDocument } from './bson-values.js';
import { CollectionIndex, type IndexSpec } from './collection-index.js';
import { CommandError } from './command-error.js';

const ID_INDEX: IndexSpec = { v: 2, key: { _id: 1 }, name: '_id_' };

/**
 * One collection: documents in natural (insertion) order keyed by their `_id`, plus indexes.
 * Stored documents are never mutated in place: every change installs a new object, so
 * cursors holding earlier results keep a consistent snapshot. Every method either applies
 * its whole change or throws before touching anything.
 */
export class Collection {
  readonly db: string;
  readonly name: string;
  readonly uuid = new UUID();
  /** `_id` canonical key -> document; a Map keeps insertion order and in-place replacement. */
  private readonly docs = new Map<string, Document>();
  private readonly indexes = new Map<string, CollectionIndex>();

  constructor(db: string, name: string) {
    this.db = db;
    this.name = name;
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  get size(): number {
    return this.docs.size;
  }

  /** Documents in natural order (a snapshot array). */
  all(): Document[] {
    return [...this.docs.values()];
  }

  indexSpecs(): IndexSpec[] {
    return [ID_INDEX, ...[...this.indexes.values()].map((i) => i.spec)];
  }

  /** Inserts `doc` (which must carry an `_id`). */
  insert(doc: Document): void {
    const idKey = this.idKeyOf(doc);
    if (this.docs.has(idKey)) throw this.duplicateIdError(doc._id);
    for (const index of this.indexes.values()) index.check(doc, idKey, this.ns);
    for (const index of this.indexes.values()) index.add(doc, idKey);
    this.docs.set(idKey, doc);
  }

  /** Replaces the stored `current` by `next` (same `_id`, checked by the caller). */
  replace(current: Document, next: Document): void {
    const idKey = this.idKeyOf(current);
    if (this.idKeyOf(next) !== idKey) {
      throw new CommandError('ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
    }
    for (const index of this.indexes.values()) index.check(next, idKey, this.ns);
    for (const index of this.indexes.values()) {
      index.remove(current, idKey);
      index.add(next, idKey);
    }
    this.docs.set(idKey, next);
  }

  remove(doc: Document): void {
    const idKey = this.idKeyOf(doc);
    for (const index of this.indexes.values()) index.remove(doc, idKey);
    this.docs.delete(idKey);
  }

  /**
   * Creates an index over the existing documents. Returns false when an identical index
   * already exists. Fails with E11000 (creating nothing) if existing documents collide.
   */
  createIndex(spec: IndexSpec): boolean {
    if (canonicalKey(spec.key) === canonicalKey(ID_INDEX.key)) {
      // The _id index always exists; asking for it again is a no-op, as in MongoDB.
      if (!spec.sparse && !spec.partialFilterExpression && spec.expireAfterSeconds === undefined) return false;
      throw new CommandError('InvalidOptions', `The _id index cannot be sparse, partial or TTL: ${formatValue(spec)}`);
    }
    if (spec.name === '_id_') throw new CommandError('IndexKeySpecsConflict', `Index with name: _id_ already exists with a different key`);
    const sameName = this.indexes.get(spec.name);
    if (sameName) {
      if (sameName.sameAs(spec)) return false;
      if (canonicalKey(sameName.spec.key) !== canonicalKey(spec.key)) {
        throw new CommandError(
          'IndexKeySpecsConflict',
          `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${formatValue(spec)}, existing index: ${formatValue(sameName.spec)}`,
        );
      }
      throw new CommandError(
        'IndexOptionsConflict',
        `An equivalent index already exists with the same name but different options. Requested index: ${formatValue(spec)}, existing index: ${formatValue(sameName.spec)}`,
      );
    }
    for (const existing of this.indexes.values()) {
      if (
        canonicalKey(existing.spec.key) === canonicalKey(spec.key) &&
        canonicalKey(existing.spec.partialFilterExpression) === canonicalKey(spec.partialFilterExpression)
      ) {
        throw new CommandError(
          'IndexOptionsConflict',
          `An equivalent index already exists with a different name and options. Requested index: ${formatValue(spec)}, existing index: ${formatValue(existing.spec)}`,
        );
      }
    }
    const index = new CollectionIndex(spec);
    for (const [idKey, doc] of this.docs) {
      index.check(doc, idKey, this.ns);
      index.add(doc, idKey);
    }
    this.indexes.set(spec.name, index);
    return true;
  }

  /** Drops one index by name; `_id_` cannot be dropped. */
  dropIndex(name: string): void {
    if (name === '_id_') throw new CommandError('InvalidOptions', 'cannot drop _id index');
    if (!this.indexes.delete(name)) throw new CommandError('IndexNotFound', `index not found with name [${name}]`);
  }

  /** Name of the index with this key pattern. */
  indexNameForKey(key: Document): string {
    const wanted = canonicalKey(key);
    if (wanted === canonicalKey(ID_INDEX.key)) return '_id_';
    for (const index of this.indexes.values()) if (canonicalKey(index.spec.key) === wanted) return index.name;
    throw new CommandError('IndexNotFound', `can't find index with key: ${formatValue(key)}`);
  }

  dropAllIndexes(): void {
    this.indexes.clear();
  }

  /** TTL: documents whose indexed date plus `expireAfterSeconds` is before `now`. */
  expired(now: Date): Document[] {
    const out: Document[] = [];
    for (const index of this.indexes.values()) {
      const { expireAfterSeconds, key } = index.spec;
      const fields = Object.keys(key);
      if (expireAfterSeconds === undefined || fields.length !== 1) continue;
      const field = fields[0] as string;
      for (const doc of this.docs.values()) {
        const raw = doc[field];
        const dates = (Array.isArray(raw) ? raw : [raw]).filter((v): v is Date => v instanceof Date);
        if (dates.length === 0) continue;
        const earliest = Math.min(...dates.map((d) => d.getTime()));
        if (earliest + expireAfterSeconds * 1000 <= now.getTime()) out.push(doc);
      }
    }
    return out;
  }

  /** Stored document with this `_id`, if any. */
  byId(id: unknown): Document | undefined {
    return this.docs.get(canonicalKey(id));
  }

  private idKeyOf(doc: Document): string {
    if (!('_id' in doc)) throw new CommandError('InternalError', 'document without _id');
    const id: unknown = doc._id;
    if (Array.isArray(id)) throw new CommandError('BadValue', "can't use an array for _id");
    if (isPlainDocument(id) && Object.keys(id).some((k) => k.startsWith('$'))) {
      throw new CommandError('BadValue', "_id fields may not contain '$'-prefixed fields");
    }
    return canonicalKey(id);
  }

  private duplicateIdError(id: unknown): CommandError {
    return new CommandError('DuplicateKey', `E11000 duplicate key error collection: ${this.ns} index: _id_ dup key: { _id: ${formatValue(id)} }`, {
      keyPattern: { _id: 1 },
      keyValue: { _id: id },
    });
  }
}

/** The stored form of an inserted document: `_id` first (MongoDB moves it there), generated if absent. */
export function withId(doc: Document): Document {
  const { _id: id, ...rest } = doc;
  return { _id: id === undefined ? new ObjectId() : id, ...rest };
}
