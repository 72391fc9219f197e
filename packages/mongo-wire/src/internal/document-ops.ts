import { type Document, serialize } from 'bson';
import { cloneDeep, compareValues, isPlainDocument, setAtPath, valuesAtPath } from './bson-values.js';
import { type Collection, withId } from './collection.js';
import { CommandError } from './command-error.js';
import { applyOperators, applyPipeline, checkPipeline, compileFilter, type EvalOptions, isOperatorUpdate } from './query-engine.js';

/** The update argument of an update statement or findAndModify, classified once. */
export type UpdateSpec =
  | { readonly kind: 'operators'; readonly doc: Document }
  | { readonly kind: 'pipeline'; readonly stages: Document[] }
  | { readonly kind: 'replacement'; readonly doc: Document };

export function parseUpdate(u: unknown): UpdateSpec {
  if (Array.isArray(u)) return { kind: 'pipeline', stages: checkPipeline(u, true) };
  if (!isPlainDocument(u)) throw new CommandError('FailedToParse', 'Update argument must be either an object or an array');
  if (isOperatorUpdate(u)) return { kind: 'operators', doc: u };
  for (const key of Object.keys(u)) {
    if (key.startsWith('$'))
      throw new CommandError(
        'BadValue',
        `The dollar ($) prefixed field '${key}' in '${key}' is not allowed in the context of an update's replacement document.`,
      );
  }
  return { kind: 'replacement', doc: u };
}

function idFirst(doc: Document, id: unknown): Document {
  const { _id: _ignored, ...rest } = doc;
  return { _id: id, ...rest };
}

/**
 * The document `current` becomes under `update`. `_id` is immutable: an operator update that
 * changes it fails with ImmutableField; a replacement or pipeline that drops it keeps the old one.
 */
export function updatedDocument(current: Document, update: UpdateSpec, options: { filter: Document; arrayFilters?: Document[]; eval: EvalOptions }): Document {
  let next: Document;
  switch (update.kind) {
    case 'operators':
      next = applyOperators(current, update.doc, {
        inserting: false,
        condition: options.filter,
        eval: options.eval,
        ...(options.arrayFilters ? { arrayFilters: options.arrayFilters } : {}),
      });
      break;
    case 'pipeline':
      next = applyPipeline(current, update.stages, options.eval);
      break;
    case 'replacement':
      next = cloneDeep(update.doc);
      break;
  }
  if (!('_id' in next)) return idFirst(next, current._id);
  if (compareValues(next._id, current._id) !== 0) {
    throw new CommandError('ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
  }
  return Object.keys(next)[0] === '_id' ? next : idFirst(next, next._id);
}

/** Equality conditions of a filter, which seed an upserted document (MongoDB rules). */
function equalitySeed(filter: Document, into: Document): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) if (isPlainDocument(part)) equalitySeed(part, into);
      continue;
    }
    if (key.startsWith('$')) continue;
    if (isPlainDocument(value)) {
      const keys = Object.keys(value);
      if (keys.length > 0 && keys.every((k) => k.startsWith('$'))) {
        if (keys.length === 1 && keys[0] === '$eq') setAtPath(into, key, cloneDeep(value.$eq));
        continue;
      }
    }
    setAtPath(into, key, cloneDeep(value));
  }
}

/** The document an upsert inserts when nothing matched `filter`. */
export function upsertDocument(filter: Document, update: UpdateSpec, options: { arrayFilters?: Document[]; eval: EvalOptions }): Document {
  const seed: Document = {};
  equalitySeed(filter, seed);
  let doc: Document;
  switch (update.kind) {
    case 'operators':
      doc = applyOperators(seed, update.doc, {
        inserting: true,
        eval: options.eval,
        ...(options.arrayFilters ? { arrayFilters: options.arrayFilters } : {}),
      });
      if ('_id' in seed && (!('_id' in doc) || compareValues(doc._id, seed._id) !== 0)) {
        throw new CommandError('ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
      }
      break;
    case 'pipeline':
      doc = applyPipeline(seed, update.stages, options.eval);
      break;
    case 'replacement':
      doc = cloneDeep(update.doc);
      if (!('_id' in doc) && '_id' in seed) doc = idFirst(doc, seed._id);
      break;
  }
  const withIdDoc = withId(doc);
  return Object.keys(withIdDoc)[0] === '_id' ? withIdDoc : idFirst(withIdDoc, withIdDoc._id);
}

/** Whether an update changed anything (byte-wise, as MongoDB's nModified counts). */
export function changed(before: Document, after: Document): boolean {
  return !Buffer.from(serialize(before)).equals(serialize(after));
}

/** Sort key of one field: arrays sort by their smallest (ascending) or largest (descending) element. */
function sortKey(doc: Document, field: string, direction: number): unknown {
  const values = valuesAtPath(doc, field).flatMap((v) => (Array.isArray(v) ? v : [v]));
  if (values.length === 0) return null;
  let best = values[0];
  for (const v of values) {
    const c = compareValues(v, best);
    if ((direction > 0 && c < 0) || (direction < 0 && c > 0)) best = v;
  }
  return best;
}

/** Parses a sort specification: `{field: 1 | -1}`; `$meta` sorts are refused. */
export function parseSort(sort: Document | undefined): [string, number][] {
  if (!sort) return [];
  return Object.entries(sort).map(([field, dir]) => {
    const n = typeof dir === 'number' ? dir : Number.NaN;
    if (n !== 1 && n !== -1) {
      throw new CommandError('BadValue', `$sort key ordering must be 1 (for ascending) or -1 (for descending); '${field}' has ${JSON.stringify(dir)}`);
    }
    return [field, n];
  });
}

/** Stable sort by MongoDB's BSON comparison order; ties keep natural order. */
export function sortDocuments(docs: Document[], spec: [string, number][]): Document[] {
  if (spec.length === 0) return docs;
  if (spec.length === 1 && spec[0]?.[0] === '$natural') return spec[0][1] < 0 ? [...docs].reverse() : docs;
  const keyed = docs.map((doc) => ({ doc, keys: spec.map(([field, dir]) => sortKey(doc, field, dir)) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < spec.length; i++) {
      const c = compareValues(a.keys[i], b.keys[i]);
      if (c !== 0) return c * (spec[i] as [string, number])[1];
    }
    return 0;
  });
  return keyed.map((k) => k.doc);
}

/** Documents of `collection` matching `filter`, in natural order. */
export function matching(collection: Collection | undefined, filter: Document | undefined, eval_: EvalOptions): Document[] {
  if (!collection) return [];
  const test = compileFilter(filter, eval_);
  // `_id` equality (the store's hot path: budgets, jobs, connectors by key) is a map lookup.
  const id: unknown = filter?._id;
  if (filter && '_id' in filter && !(id instanceof RegExp) && !Array.isArray(id) && !(isPlainDocument(id) && Object.keys(id).some((k) => k.startsWith('$')))) {
    const doc = collection.byId(id);
    return doc && test(doc) ? [doc] : [];
  }
  return collection.all().filter(test);
}
