import { type Document, UUID } from 'bson';
import { type CommandContext, type CommandHandler } from '../command-context.js';
import { CommandError } from '../command-error.js';

/** MongoDB 7.0's wire version; the driver uses it to pick OP_MSG and command shapes. */
export const MAX_WIRE_VERSION = 21;
export const SERVER_VERSION = '7.0.0';
const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;
const MAX_MESSAGE_SIZE_BYTES = 48_000_000;
const MAX_WRITE_BATCH_SIZE = 100_000;
const LOGICAL_SESSION_TIMEOUT_MINUTES = 30;

/**
 * A standalone server's hello. No `topologyVersion`, so drivers poll instead of streaming
 * (awaitable hello); no `compression`, so no OP_COMPRESSED arrives; no `setName`, so the
 * driver treats it as standalone (sessions yes, transactions no).
 */
function helloReply(ctx: CommandContext, legacy: boolean): Document {
  return {
    helloOk: true,
    ...(legacy ? { ismaster: true } : { isWritablePrimary: true }),
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: MAX_MESSAGE_SIZE_BYTES,
    maxWriteBatchSize: MAX_WRITE_BATCH_SIZE,
    localTime: ctx.now,
    logicalSessionTimeoutMinutes: LOGICAL_SESSION_TIMEOUT_MINUTES,
    connectionId: ctx.connectionId,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
    ok: 1,
  };
}

const hello: CommandHandler = (_cmd, ctx) => helloReply(ctx, false);
const isMaster: CommandHandler = (_cmd, ctx) => helloReply(ctx, true);

const buildInfo: CommandHandler = () => ({
  version: SERVER_VERSION,
  gitVersion: 'mongo-wire',
  versionArray: [7, 0, 0, 0],
  bits: 64,
  debug: false,
  maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
  storageEngines: ['mongo-wire-memory'],
  modules: [],
  ok: 1,
});

const ok: CommandHandler = () => ({ ok: 1 });

const startSession: CommandHandler = () => ({ id: { id: new UUID() }, timeoutMinutes: LOGICAL_SESSION_TIMEOUT_MINUTES, ok: 1 });

const whatsmyuri: CommandHandler = (_cmd, ctx) => ({ you: ctx.peer, ok: 1 });

const connectionStatus: CommandHandler = () => ({
  authInfo: { authenticatedUsers: [], authenticatedUserRoles: [] },
  ok: 1,
});

const noTransactions: CommandHandler = () => {
  throw new CommandError('IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos');
};

export const handshakeCommands: Record<string, CommandHandler> = {
  hello,
  isMaster,
  ismaster: isMaster,
  buildInfo,
  buildinfo: buildInfo,
  ping: ok,
  endSessions: ok,
  refreshSessions: ok,
  killSessions: ok,
  startSession,
  whatsmyuri,
  connectionStatus,
  commitTransaction: noTransactions,
  abortTransaction: noTransactions,
};
