import { type Document } from 'bson';
import { canonicalKey, formatValue, valuesAtPath } from './bson-values.js';
import { CommandError } from './command-error.js';
import { compileFilter } from './query-engine.js';

/** The stored form of an index, as `listIndexes` reports it. */
export interface IndexSpec {
  readonly v: 2;
  readonly key: Document;
  readonly name: string;
  readonly unique?: boolean;
  readonly sparse?: boolean;
  readonly partialFilterExpression?: Document;
  readonly expireAfterSeconds?: number;
}

/** Index options this server understands; anything else in an index spec is refused. */
export const INDEX_SPEC_FIELDS = new Set([
  'key',
  'name',
  'unique',
  'sparse',
  'partialFilterExpression',
  'expireAfterSeconds',
  'background',
  'v',
  'ns',
  'hidden',
]);

interface KeyEntry {
  readonly key: string;
  readonly values: unknown[];
}

/**
 * One index of a collection. Non-unique indexes are catalog entries only (every query is a
 * scan); unique ones keep a key -> `_id` map so E11000 is detected in O(1) per key, with
 * MongoDB's rules: a missing field indexes as null (two documents without the field collide
 * unless the index is sparse or partial), and an array field is multikey (each element is a key).
 */
export class CollectionIndex {
  readonly spec: IndexSpec;
  private readonly fields: string[];
  private readonly partial: ((doc: Document) => boolean) | undefined;
  private readonly entries = new Map<string, string>();

  constructor(spec: IndexSpec) {
    this.spec = spec;
    this.fields = Object.keys(spec.key);
    this.partial = spec.partialFilterExpression ? compileFilter(spec.partialFilterExpression, { now: new Date() }) : undefined;
  }

  get name(): string {
    return this.spec.name;
  }

  get unique(): boolean {
    return this.spec.unique === true;
  }

  /** Whether two specs describe the same index (same key and same uniqueness/filters). */
  sameAs(other: IndexSpec): boolean {
    return (
      canonicalKey(this.spec.key) === canonicalKey(other.key) &&
      (this.spec.unique === true) === (other.unique === true) &&
      (this.spec.sparse === true) === (other.sparse === true) &&
      canonicalKey(this.spec.partialFilterExpression) === canonicalKey(other.partialFilterExpression) &&
      this.spec.expireAfterSeconds === other.expireAfterSeconds
    );
  }

  /** The index keys of `doc`, or none when sparse/partial rules leave it out. */
  private keysOf(doc: Document): KeyEntry[] {
    if (this.partial && !this.partial(doc)) return [];
    const perField = this.fields.map((field) => valuesAtPath(doc, field).flatMap((v) => (Array.isArray(v) ? (v.length ? v : [undefined]) : [v])));
    if (this.spec.sparse && perField.every((values) => values.length === 0)) return [];
    let tuples: unknown[][] = [[]];
    for (const values of perField) {
      const options = values.length === 0 ? [null] : values;
      tuples = tuples.flatMap((t) => options.map((v) => [...t, v ?? null]));
    }
    const seen = new Map<string, KeyEntry>();
    for (const values of tuples) {
      const key = values.map(canonicalKey).join('|');
      if (!seen.has(key)) seen.set(key, { key, values });
    }
    return [...seen.values()];
  }

  /** Throws E11000 if `doc` (identified by `idKey`) would duplicate another document's key. */
  check(doc: Document, idKey: string, ns: string): void {
    if (!this.unique) return;
    for (const entry of this.keysOf(doc)) {
      const owner = this.entries.get(entry.key);
      if (owner !== undefined && owner !== idKey) throw this.duplicateError(entry, ns);
    }
  }

  add(doc: Document, idKey: string): void {
    if (!this.unique) return;
    for (const entry of this.keysOf(doc)) this.entries.set(entry.key, idKey);
  }

  remove(doc: Document, idKey: string): void {
    if (!this.unique) return;
    for (const entry of this.keysOf(doc)) if (this.entries.get(entry.key) === idKey) this.entries.delete(entry.key);
  }

  private duplicateError(entry: KeyEntry, ns: string): CommandError {
    const keyValue: Document = {};
    this.fields.forEach((field, i) => {
      keyValue[field] = entry.values[i];
    });
    const shown = Object.entries(keyValue)
      .map(([k, v]) => `${k}: ${formatValue(v)}`)
      .join(', ');
    return new CommandError('DuplicateKey', `E11000 duplicate key error collection: ${ns} index: ${this.spec.name} dup key: { ${shown} }`, {
      keyPattern: { ...this.spec.key },
      keyValue,
    });
  }
}
