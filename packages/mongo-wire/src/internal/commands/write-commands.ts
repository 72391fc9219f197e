import { type Document } from 'bson';
import { isPlainDocument } from '../bson-values.js';
import { withId } from '../collection.js';
import { checkFields, collectionName, type CommandContext, type CommandHandler, evalOptions, optionalDocument, refuseOptions } from '../command-context.js';
import { CommandError } from '../command-error.js';
import { changed, matching, parseUpdate, updatedDocument, upsertDocument } from '../document-ops.js';

/** Runs write statements in order; ordered writes stop at the first error (MongoDB semantics). */
function runStatements<T>(statements: T[], ordered: boolean, run: (stmt: T, index: number) => void): Document[] {
  const writeErrors: Document[] = [];
  for (let i = 0; i < statements.length; i++) {
    try {
      run(statements[i] as T, i);
    } catch (err) {
      if (!(err instanceof CommandError)) throw err;
      writeErrors.push(err.toWriteError(i));
      if (ordered) break;
    }
  }
  return writeErrors;
}

function statementsOf(cmd: Document, field: string, command: string): Document[] {
  const value: unknown = cmd[field];
  if (!Array.isArray(value)) throw new CommandError('FailedToParse', `BSON field '${command}.${field}' is missing but a required field`);
  for (const item of value) {
    if (!isPlainDocument(item)) throw new CommandError('TypeMismatch', `BSON field '${command}.${field}' must be an array of objects`);
  }
  return value as Document[];
}

function reply(base: Document, writeErrors: Document[]): Document {
  return writeErrors.length > 0 ? { ...base, writeErrors, ok: 1 } : { ...base, ok: 1 };
}

const insert: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'insert', ['documents', 'ordered', 'bypassDocumentValidation', 'let']);
  const name = collectionName(cmd, 'insert');
  const documents = statementsOf(cmd, 'documents', 'insert');
  if (documents.length === 0) throw new CommandError('InvalidLength', 'Write batch sizes must be between 1 and 100000. Got 0 operations.');
  const ordered = cmd.ordered !== false;
  const { collection } = ctx.catalog.ensure(ctx.db, name);
  let n = 0;
  const writeErrors = runStatements(documents, ordered, (doc) => {
    collection.insert(withId(doc));
    n++;
  });
  return reply({ n }, writeErrors);
};

const UPDATE_STATEMENT_FIELDS = ['q', 'u', 'upsert', 'multi', 'arrayFilters', 'hint', 'collation', 'c', 'upsertSupplied', 'sort'];

const update: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'update', ['updates', 'ordered', 'bypassDocumentValidation', 'let']);
  const name = collectionName(cmd, 'update');
  const statements = statementsOf(cmd, 'updates', 'update');
  for (const stmt of statements) {
    checkFields(
      stmt,
      'q',
      UPDATE_STATEMENT_FIELDS.filter((f) => f !== 'q'),
      'update.updates',
    );
    refuseOptions(stmt, 'update', ['collation', 'sort']);
  }
  const ordered = cmd.ordered !== false;
  const variables = optionalDocument(cmd, 'let', 'update');
  let n = 0;
  let nModified = 0;
  const upserted: Document[] = [];
  const writeErrors = runStatements(statements, ordered, (stmt, index) => {
    const result = updateOne(ctx, name, stmt, variables);
    n += result.n;
    nModified += result.nModified;
    if (result.upsertedId !== undefined) upserted.push({ index, _id: result.upsertedId });
  });
  return reply(upserted.length > 0 ? { n, nModified, upserted } : { n, nModified }, writeErrors);
};

function updateOne(ctx: CommandContext, name: string, stmt: Document, variables: Document | undefined): { n: number; nModified: number; upsertedId?: unknown } {
  const filter = optionalDocument(stmt, 'q', 'update.updates') ?? {};
  const spec = parseUpdate(stmt.u);
  const constants = optionalDocument(stmt, 'c', 'update.updates');
  const eval_ = evalOptions(ctx, constants || variables ? { ...variables, ...constants } : undefined);
  const arrayFilters = Array.isArray(stmt.arrayFilters) ? (stmt.arrayFilters as Document[]) : undefined;
  if (stmt.multi === true && spec.kind === 'replacement') {
    throw new CommandError('FailedToParse', 'multi update is not supported for replacement-style update');
  }
  const existing = ctx.catalog.collection(ctx.db, name);
  const matches = matching(existing, filter, eval_);
  const targets = stmt.multi === true ? matches : matches.slice(0, 1);
  if (targets.length === 0) {
    if (stmt.upsert !== true) return { n: 0, nModified: 0 };
    const doc = upsertDocument(filter, spec, { eval: eval_, ...(arrayFilters ? { arrayFilters } : {}) });
    ctx.catalog.ensure(ctx.db, name).collection.insert(doc);
    return { n: 1, nModified: 0, upsertedId: doc._id };
  }
  const collection = existing;
  if (!collection) return { n: 0, nModified: 0 };
  let nModified = 0;
  let n = 0;
  for (const current of targets) {
    const next = updatedDocument(current, spec, { filter, eval: eval_, ...(arrayFilters ? { arrayFilters } : {}) });
    n++;
    if (changed(current, next)) {
      collection.replace(current, next);
      nModified++;
    }
  }
  return { n, nModified };
}

const remove: CommandHandler = (cmd, ctx) => {
  checkFields(cmd, 'delete', ['deletes', 'ordered', 'let']);
  const name = collectionName(cmd, 'delete');
  const statements = statementsOf(cmd, 'deletes', 'delete');
  for (const stmt of statements) {
    checkFields(stmt, 'q', ['limit', 'hint', 'collation'], 'delete.deletes');
    refuseOptions(stmt, 'delete', ['collation']);
  }
  const variables = optionalDocument(cmd, 'let', 'delete');
  const collection = ctx.catalog.collection(ctx.db, name);
  let n = 0;
  const writeErrors = runStatements(statements, cmd.ordered !== false, (stmt) => {
    const limit: unknown = stmt.limit;
    if (limit !== 0 && limit !== 1) throw new CommandError('FailedToParse', 'The limit field in delete objects must be 0 or 1.');
    const filter = optionalDocument(stmt, 'q', 'delete.deletes') ?? {};
    const matches = matching(collection, filter, evalOptions(ctx, variables));
    const targets = limit === 1 ? matches.slice(0, 1) : matches;
    for (const doc of targets) collection?.remove(doc);
    n += targets.length;
  });
  return reply({ n }, writeErrors);
};

export const writeCommands: Record<string, CommandHandler> = { insert, update, delete: remove };
