import { type Document, Long } from 'bson';
import { canonicalKey, valuesAtPath } from '../bson-values.js';
import { checkFields, collectionName, type CommandHandler, evalOptions, optionalDocument, optionalInteger, refuseOptions } from '../command-context.js';
import { CommandError } from '../command-error.js';
import { matching, parseSort, sortDocuments } from '../document-ops.js';
import { checkPipeline, project, runPipeline } from '../query-engine.js';

function cursorReply(ns: string, batch: { docs: Document[]; id: Long }, key: 'firstBatch' | 'nextBatch'): Document {
  return { cursor: { [key]: batch.docs, id: batch.id, ns }, ok: 1 };
}

function nonNegative(value: number | undefined, what: string): number | undefined {
  if (value !== undefined && value < 0) throw new CommandError('BadValue', `${what} value must be non-negative, but received: ${value}`);
  return value;
}

const find: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'find', [
    'filter',
    'sort',
    'projection',
    'hint',
    'skip',
    'limit',
    'batchSize',
    'singleBatch',
    'max',
    'min',
    'returnKey',
    'showRecordId',
    'tailable',
    'oplogReplay',
    'noCursorTimeout',
    'awaitData',
    'allowPartialResults',
    'collation',
    'allowDiskUse',
    'let',
    'readOnce',
    'term',
  ]);
  refuseOptions(cmd, 'find', ['max', 'min', 'returnKey', 'showRecordId', 'tailable', 'awaitData', 'collation']);
  const name = collectionName(cmd, 'find');
  const ns = `${ctx.db}.${name}`;
  const eval_ = evalOptions(ctx, optionalDocument(cmd, 'let', 'find'));
  const skip = nonNegative(optionalInteger(cmd, 'skip', 'find'), 'skip') ?? 0;
  const limit = nonNegative(optionalInteger(cmd, 'limit', 'find'), 'limit') ?? 0;
  const batchSize = nonNegative(optionalInteger(cmd, 'batchSize', 'find'), 'batchSize');
  const sort = parseSort(optionalDocument(cmd, 'sort', 'find'));
  let docs = sortDocuments(matching(ctx.catalog.collection(ctx.db, name), optionalDocument(cmd, 'filter', 'find'), eval_), sort);
  docs = docs.slice(skip, limit > 0 ? skip + limit : undefined);
  docs = project(docs, optionalDocument(cmd, 'projection', 'find'), eval_);
  return cursorReply(ns, ctx.cursors.open(ns, docs, batchSize, cmd.singleBatch === true), 'firstBatch');
};

function cursorIdOf(value: unknown): number {
  if (value instanceof Long) return value.toNumber();
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw new CommandError('TypeMismatch', "BSON field 'getMore.getMore' is the wrong type, expected type 'long'");
}

const getMore: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'getMore', ['collection', 'batchSize', 'term', 'lastKnownCommittedOpTime']);
  const id = cursorIdOf(cmd.getMore);
  const name: unknown = cmd.collection;
  if (typeof name !== 'string') throw new CommandError('FailedToParse', "BSON field 'getMore.collection' is missing but a required field");
  const ns = `${ctx.db}.${name}`;
  return cursorReply(ns, ctx.cursors.next(id, ns, optionalInteger(cmd, 'batchSize', 'getMore')), 'nextBatch');
};

const killCursors: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'killCursors', ['cursors']);
  collectionName(cmd, 'killCursors');
  const ids = Array.isArray(cmd.cursors) ? (cmd.cursors as unknown[]).map(cursorIdOf) : [];
  const { killed, notFound } = ctx.cursors.kill(ids);
  return {
    cursorsKilled: killed.map((id) => Long.fromNumber(id)),
    cursorsNotFound: notFound.map((id) => Long.fromNumber(id)),
    cursorsAlive: [],
    cursorsUnknown: [],
    ok: 1,
  };
};

const count: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'count', ['query', 'limit', 'skip', 'hint', 'collation', 'fields']);
  refuseOptions(cmd, 'count', ['collation']);
  const name = collectionName(cmd, 'count');
  const query = optionalDocument(cmd, 'query', 'count');
  const collection = ctx.catalog.collection(ctx.db, name);
  const skip = nonNegative(optionalInteger(cmd, 'skip', 'count'), 'skip') ?? 0;
  // count treats a negative limit as its absolute value.
  const limit = Math.abs(optionalInteger(cmd, 'limit', 'count') ?? 0);
  const total = query && Object.keys(query).length > 0 ? matching(collection, query, evalOptions(ctx)).length : (collection?.size ?? 0);
  const afterSkip = Math.max(0, total - skip);
  return { n: limit > 0 ? Math.min(limit, afterSkip) : afterSkip, ok: 1 };
};

const distinct: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'distinct', ['key', 'query', 'collation', 'hint']);
  refuseOptions(cmd, 'distinct', ['collation']);
  const name = collectionName(cmd, 'distinct');
  const key: unknown = cmd.key;
  if (typeof key !== 'string') throw new CommandError('TypeMismatch', "BSON field 'distinct.key' is the wrong type, expected type 'string'");
  const docs = matching(ctx.catalog.collection(ctx.db, name), optionalDocument(cmd, 'query', 'distinct'), evalOptions(ctx));
  const seen = new Map<string, unknown>();
  for (const doc of docs) {
    // distinct treats each element of an array field as a separate value.
    for (const value of valuesAtPath(doc, key).flatMap((v) => (Array.isArray(v) ? v : [v]))) {
      const k = canonicalKey(value);
      if (!seen.has(k)) seen.set(k, value);
    }
  }
  return { values: [...seen.values()], ok: 1 };
};

const aggregate: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'aggregate', ['pipeline', 'cursor', 'explain', 'allowDiskUse', 'bypassDocumentValidation', 'collation', 'hint', 'let']);
  refuseOptions(cmd, 'aggregate', ['explain', 'collation']);
  const target: unknown = cmd.aggregate;
  const pipeline = checkPipeline(cmd.pipeline, false);
  const cursor = optionalDocument(cmd, 'cursor', 'aggregate');
  if (!cursor) throw new CommandError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
  const batchSize = nonNegative(optionalInteger(cursor, 'batchSize', 'aggregate.cursor'), 'batchSize');
  let input: Document[];
  let ns: string;
  if (target === 1) {
    input = [];
    ns = `${ctx.db}.$cmd.aggregate`;
  } else {
    const name = collectionName(cmd, 'aggregate');
    input = ctx.catalog.collection(ctx.db, name)?.all() ?? [];
    ns = `${ctx.db}.${name}`;
  }
  const docs = runPipeline(input, pipeline, evalOptions(ctx, optionalDocument(cmd, 'let', 'aggregate')));
  return cursorReply(ns, ctx.cursors.open(ns, docs, batchSize, false), 'firstBatch');
};

export const readCommands: Record<string, CommandHandler> = { find, getMore, killCursors, count, distinct, aggregate };
