import { type Document, Long } from 'bson';
import { type CursorRegistry } from './cursor-registry.js';
import { type DatabaseCatalog } from './database-catalog.js';
import { CommandError } from './command-error.js';
import { type EvalOptions } from './query-engine.js';

/** What a command handler sees: shared state plus this command's database, time and peer. */
export interface CommandContext {
  readonly catalog: DatabaseCatalog;
  readonly cursors: CursorRegistry;
  /** The command's `$db`. */
  readonly db: string;
  /** One instant per command: `$$NOW`, `localTime`, TTL decisions. */
  readonly now: Date;
  readonly connectionId: number;
  readonly peer: string;
}

/** A command implementation: runs synchronously to completion (that is what makes it atomic). */
export type CommandHandler = (cmd: Document, ctx: CommandContext) => Document;

/** Fields every command may carry (sessions, gossip, read/write concerns, API version). */
const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'comment',
  'maxTimeMS',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  '$audit',
  '$client',
  'mayBypassWriteBlocking',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$queryOptions',
  'backpressure',
]);

/**
 * Refuses fields the command does not know (MongoDB's IDL error 40415 naming the field), so
 * an option this server does not implement fails loudly instead of being ignored.
 */
export function checkFields(cmd: Document, command: string, allowed: readonly string[], prefix = command): void {
  for (const key of Object.keys(cmd)) {
    if (key === command || GENERIC_FIELDS.has(key) || allowed.includes(key)) continue;
    throw new CommandError('UnknownField', `BSON field '${prefix}.${key}' is an unknown field.`);
  }
}

/** Refuses a MongoDB option this server knows of but does not implement. */
export function refuseOptions(cmd: Document, command: string, options: readonly string[]): void {
  for (const option of options) {
    const value: unknown = cmd[option];
    if (value === undefined || value === false || value === null) continue;
    throw new CommandError('BadValue', `mongo-wire does not support option '${option}' of command '${command}'`);
  }
}

/** The collection name a command addresses (`{insert: "name"}`). */
export function collectionName(cmd: Document, command: string): string {
  const name: unknown = cmd[command];
  if (typeof name !== 'string' || name.length === 0) {
    throw new CommandError('InvalidNamespace', `collection name has invalid type ${typeof name}`);
  }
  return name;
}

export function optionalDocument(cmd: Document, field: string, command: string): Document | undefined {
  const value: unknown = cmd[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new CommandError(
      'TypeMismatch',
      `BSON field '${command}.${field}' is the wrong type '${Array.isArray(value) ? 'array' : typeof value}', expected type 'object'`,
    );
  }
  return value as Document;
}

/** Reads an integral number option (int32, int64 or integral double). */
export function optionalInteger(cmd: Document, field: string, command: string): number | undefined {
  const value: unknown = cmd[field];
  if (value === undefined || value === null) return undefined;
  const n = value instanceof Long ? value.toNumber() : typeof value === 'number' ? value : Number.NaN;
  if (!Number.isInteger(n)) {
    throw new CommandError('TypeMismatch', `BSON field '${command}.${field}' is the wrong type, expected a number`);
  }
  return n;
}

export function evalOptions(ctx: CommandContext, variables?: Document): EvalOptions {
  return {
    now: ctx.now,
    ...(variables ? { variables } : {}),
    resolveCollection: (name: string) => ctx.catalog.collection(ctx.db, name)?.all() ?? [],
  };
}
