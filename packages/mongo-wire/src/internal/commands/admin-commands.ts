import { type Document } from 'bson';
import { isPlainDocument } from '../bson-values.js';
import { INDEX_SPEC_FIELDS, type IndexSpec } from '../collection-index.js';
import { checkFields, collectionName, type CommandHandler, optionalDocument, refuseOptions } from '../command-context.js';
import { CommandError } from '../command-error.js';
import { DatabaseCatalog } from '../database-catalog.js';
import { compileFilter } from '../query-engine.js';

const UNSUPPORTED_CREATE_OPTIONS = [
  'capped',
  'size',
  'max',
  'validator',
  'validationLevel',
  'validationAction',
  'timeseries',
  'expireAfterSeconds',
  'clusteredIndex',
  'viewOn',
  'pipeline',
  'collation',
  'storageEngine',
  'changeStreamPreAndPostImages',
  'indexOptionDefaults',
  'encryptedFields',
];

const create: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'create', [...UNSUPPORTED_CREATE_OPTIONS, 'autoIndexId', 'idIndex']);
  refuseOptions(cmd, 'create', UNSUPPORTED_CREATE_OPTIONS);
  const name = collectionName(cmd, 'create');
  DatabaseCatalog.checkNames(ctx.db, name);
  if (ctx.catalog.collection(ctx.db, name)) {
    throw new CommandError('NamespaceExists', `Collection ${ctx.db}.${name} already exists.`);
  }
  ctx.catalog.ensure(ctx.db, name);
  return { ok: 1 };
};

const drop: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'drop', []);
  const name = collectionName(cmd, 'drop');
  const dropped = ctx.catalog.dropCollection(ctx.db, name);
  const ns = `${ctx.db}.${name}`;
  ctx.cursors.killNamespace(ns);
  // Since MongoDB 7.0 dropping a missing collection succeeds.
  return dropped ? { nIndexesWas: dropped.indexSpecs().length, ns, ok: 1 } : { ok: 1 };
};

const dropDatabase: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'dropDatabase', []);
  for (const collection of ctx.catalog.collections(ctx.db)) ctx.cursors.killNamespace(collection.ns);
  ctx.catalog.dropDatabase(ctx.db);
  return { ok: 1 };
};

const listCollections: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'listCollections', ['filter', 'nameOnly', 'authorizedCollections', 'cursor']);
  const nameOnly = cmd.nameOnly === true;
  const all = ctx.catalog.collections(ctx.db).map((c) => ({
    name: c.name,
    type: 'collection',
    options: {},
    info: { readOnly: false, uuid: c.uuid },
    idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
  }));
  const test = compileFilter(optionalDocument(cmd, 'filter', 'listCollections'), { now: ctx.now });
  const docs: Document[] = all.filter(test).map((d) => (nameOnly ? { name: d.name, type: d.type } : d));
  const ns = `${ctx.db}.$cmd.listCollections`;
  const batchSize = (optionalDocument(cmd, 'cursor', 'listCollections')?.batchSize as number | undefined) ?? undefined;
  const batch = ctx.cursors.open(ns, docs, batchSize, false);
  return { cursor: { id: batch.id, ns, firstBatch: batch.docs }, ok: 1 };
};

const listDatabases: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'listDatabases', ['filter', 'nameOnly', 'authorizedDatabases']);
  const databases = ctx.catalog.databaseNames().map((name) => ({ name, sizeOnDisk: 0, empty: false }));
  const test = compileFilter(optionalDocument(cmd, 'filter', 'listDatabases'), { now: ctx.now });
  const selected = databases.filter(test);
  return {
    databases: cmd.nameOnly === true ? selected.map((d) => ({ name: d.name })) : selected,
    totalSize: 0,
    totalSizeMb: 0,
    ok: 1,
  };
};

function parseIndexSpec(raw: unknown): IndexSpec {
  if (!isPlainDocument(raw)) throw new CommandError('TypeMismatch', 'Each index specification must be an object');
  for (const field of Object.keys(raw)) {
    if (!INDEX_SPEC_FIELDS.has(field)) {
      throw new CommandError('InvalidOptions', `mongo-wire does not support index option '${field}'`);
    }
  }
  const key: unknown = raw.key;
  if (!isPlainDocument(key) || Object.keys(key).length === 0) {
    throw new CommandError('FailedToParse', "The 'key' field is a required property of an index specification");
  }
  for (const [field, direction] of Object.entries(key)) {
    if (direction !== 1 && direction !== -1) {
      throw new CommandError('BadValue', `mongo-wire supports only ascending/descending index keys; '${field}' has ${JSON.stringify(direction)}`);
    }
  }
  const name: unknown = raw.name;
  if (typeof name !== 'string' || name.length === 0) {
    throw new CommandError('FailedToParse', "The 'name' field is a required property of an index specification");
  }
  const expire: unknown = raw.expireAfterSeconds;
  if (expire !== undefined && (typeof expire !== 'number' || expire < 0)) {
    throw new CommandError('InvalidOptions', "TTL index 'expireAfterSeconds' option must be a non-negative number");
  }
  const partial = raw.partialFilterExpression;
  if (partial !== undefined && !isPlainDocument(partial)) {
    throw new CommandError('TypeMismatch', "'partialFilterExpression' for an index must be a document");
  }
  return {
    v: 2,
    key,
    name,
    ...(raw.unique === true ? { unique: true } : {}),
    ...(raw.sparse === true ? { sparse: true } : {}),
    ...(partial ? { partialFilterExpression: partial } : {}),
    ...(typeof expire === 'number' ? { expireAfterSeconds: expire } : {}),
  };
}

const createIndexes: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'createIndexes', ['indexes', 'commitQuorum']);
  const name = collectionName(cmd, 'createIndexes');
  if (!Array.isArray(cmd.indexes) || cmd.indexes.length === 0) {
    throw new CommandError('BadValue', 'Must specify at least one index to create');
  }
  const specs = (cmd.indexes as unknown[]).map(parseIndexSpec);
  const { collection, created } = ctx.catalog.ensure(ctx.db, name);
  const before = collection.indexSpecs().length;
  let made = 0;
  for (const spec of specs) if (collection.createIndex(spec)) made++;
  return {
    numIndexesBefore: before,
    numIndexesAfter: collection.indexSpecs().length,
    createdCollectionAutomatically: created,
    ...(made === 0 ? { note: 'all indexes already exist' } : {}),
    ok: 1,
  };
};

const listIndexes: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'listIndexes', ['cursor']);
  const name = collectionName(cmd, 'listIndexes');
  const collection = ctx.catalog.collection(ctx.db, name);
  if (!collection) throw new CommandError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
  const ns = `${ctx.db}.$cmd.listIndexes.${name}`;
  const batchSize = optionalDocument(cmd, 'cursor', 'listIndexes')?.batchSize as number | undefined;
  const batch = ctx.cursors.open(
    ns,
    collection.indexSpecs().map((s) => ({ ...s })),
    batchSize,
    false,
  );
  return { cursor: { id: batch.id, ns, firstBatch: batch.docs }, ok: 1 };
};

const dropIndexes: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'dropIndexes', ['index']);
  const name = collectionName(cmd, 'dropIndexes');
  const collection = ctx.catalog.collection(ctx.db, name);
  if (!collection) throw new CommandError('NamespaceNotFound', `ns not found ${ctx.db}.${name}`);
  const nIndexesWas = collection.indexSpecs().length;
  const index: unknown = cmd.index;
  if (index === '*') {
    collection.dropAllIndexes();
  } else if (typeof index === 'string') {
    collection.dropIndex(index);
  } else if (Array.isArray(index)) {
    const names = index.filter((n): n is string => typeof n === 'string');
    // Check all names first so a missing one drops nothing.
    for (const n of names)
      if (n !== '_id_' && !collection.indexSpecs().some((s) => s.name === n)) {
        throw new CommandError('IndexNotFound', `index not found with name [${n}]`);
      }
    for (const n of names) collection.dropIndex(n);
  } else if (isPlainDocument(index)) {
    collection.dropIndex(collection.indexNameForKey(index));
  } else {
    throw new CommandError('TypeMismatch', "BSON field 'dropIndexes.index' is the wrong type");
  }
  return { nIndexesWas, ok: 1 };
};

function splitNamespace(value: unknown, field: string): [string, string] {
  const dot = typeof value === 'string' ? value.indexOf('.') : -1;
  if (typeof value !== 'string' || dot <= 0 || dot === value.length - 1) {
    throw new CommandError('InvalidNamespace', `Invalid namespace specified '${String(value)}' in '${field}'`);
  }
  return [value.slice(0, dot), value.slice(dot + 1)];
}

const renameCollection: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'renameCollection', ['to', 'dropTarget', 'stayTemp']);
  if (ctx.db !== 'admin') throw new CommandError('Unauthorized', 'renameCollection may only be run against the admin database.');
  const [fromDb, fromName] = splitNamespace(cmd.renameCollection, 'renameCollection');
  const [toDb, toName] = splitNamespace(cmd.to, 'to');
  const source = ctx.catalog.collection(fromDb, fromName);
  if (!source) throw new CommandError('NamespaceNotFound', `Source collection ${fromDb}.${fromName} does not exist`);
  if (fromDb === toDb && fromName === toName) throw new CommandError('IllegalOperation', "Can't rename a collection to itself");
  if (ctx.catalog.collection(toDb, toName)) {
    if (cmd.dropTarget !== true) throw new CommandError('NamespaceExists', 'target namespace exists');
  }
  DatabaseCatalog.checkNames(toDb, toName);
  ctx.catalog.rename(source, toDb, toName);
  ctx.cursors.killNamespace(source.ns);
  return { ok: 1 };
};

export const adminCommands: Record<string, CommandHandler> = {
  create,
  drop,
  dropDatabase,
  listCollections,
  listDatabases,
  createIndexes,
  listIndexes,
  dropIndexes,
  renameCollection,
};
