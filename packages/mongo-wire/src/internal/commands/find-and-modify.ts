import { type Document } from 'bson';
import { checkFields, collectionName, type CommandHandler, evalOptions, optionalDocument, refuseOptions } from '../command-context.js';
import { CommandError } from '../command-error.js';
import { changed, matching, parseSort, parseUpdate, sortDocuments, updatedDocument, upsertDocument } from '../document-ops.js';
import { project } from '../query-engine.js';

/**
 * findAndModify: select the first document by `query` and `sort`, then remove it, update it
 * (operators, replacement or pipeline) or upsert, returning the old or new version. One
 * synchronous step, so concurrent `$inc`s through it never lose an update.
 */
const findAndModify: CommandHandler = (cmd, ctx) => {
  const command = 'findAndModify' in cmd ? 'findAndModify' : 'findandmodify';
  checkFields(cmd, command, [
    'query',
    'sort',
    'remove',
    'update',
    'new',
    'fields',
    'upsert',
    'bypassDocumentValidation',
    'collation',
    'arrayFilters',
    'hint',
    'let',
  ]);
  refuseOptions(cmd, command, ['collation']);
  const name = collectionName(cmd, command);
  const filter = optionalDocument(cmd, 'query', command) ?? {};
  const sort = parseSort(optionalDocument(cmd, 'sort', command));
  const fields = optionalDocument(cmd, 'fields', command);
  const variables = optionalDocument(cmd, 'let', command);
  const eval_ = evalOptions(ctx, variables);
  const remove = cmd.remove === true;
  const hasUpdate = cmd.update !== undefined && cmd.update !== null;
  const returnNew = cmd.new === true;
  const upsert = cmd.upsert === true;
  const arrayFilters = Array.isArray(cmd.arrayFilters) ? (cmd.arrayFilters as Document[]) : undefined;
  if (remove && hasUpdate) throw new CommandError('FailedToParse', 'Cannot specify both an update and remove=true');
  if (!remove && !hasUpdate) throw new CommandError('FailedToParse', 'Either an update or remove=true must be specified');
  if (remove && (upsert || returnNew)) throw new CommandError('FailedToParse', 'Cannot specify both upsert=true and remove=true, or new=true and remove=true');

  const shape = (doc: Document | null): Document | null => (doc && fields ? (project([doc], fields, eval_)[0] ?? null) : doc);
  const collection = ctx.catalog.collection(ctx.db, name);
  const target = sortDocuments(matching(collection, filter, eval_), sort)[0];

  if (remove) {
    if (!target || !collection) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
    collection.remove(target);
    return { lastErrorObject: { n: 1 }, value: shape(target), ok: 1 };
  }

  const spec = parseUpdate(cmd.update);
  if (target && collection) {
    const next = updatedDocument(target, spec, { filter, eval: eval_, ...(arrayFilters ? { arrayFilters } : {}) });
    if (changed(target, next)) collection.replace(target, next);
    return { lastErrorObject: { n: 1, updatedExisting: true }, value: shape(returnNew ? next : target), ok: 1 };
  }
  if (!upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
  const doc = upsertDocument(filter, spec, { eval: eval_, ...(arrayFilters ? { arrayFilters } : {}) });
  ctx.catalog.ensure(ctx.db, name).collection.insert(doc);
  return {
    lastErrorObject: { n: 1, updatedExisting: false, upserted: doc._id },
    value: returnNew ? shape(doc) : null,
    ok: 1,
  };
};

export const findAndModifyCommands: Record<string, CommandHandler> = {
  findAndModify,
  findandmodify: findAndModify,
};
