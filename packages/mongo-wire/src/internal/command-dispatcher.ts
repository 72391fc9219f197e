import { type Document } from 'bson';
import { type CommandContext, type CommandHandler } from './command-context.js';
import { CommandError } from './command-error.js';
import { CursorRegistry } from './cursor-registry.js';
import { DatabaseCatalog } from './database-catalog.js';
import { adminCommands } from './commands/admin-commands.js';
import { findAndModifyCommands } from './commands/find-and-modify.js';
import { handshakeCommands } from './commands/handshake-commands.js';
import { readCommands } from './commands/read-commands.js';
import { writeCommands } from './commands/write-commands.js';

/** Who sent a command. */
export interface CommandOrigin {
  readonly connectionId: number;
  readonly peer: string;
}

/**
 * Routes a command document to its handler and shapes failures as MongoDB does. Handlers are
 * synchronous, and the server calls `execute` for one command at a time on the event loop,
 * so each command sees and leaves a consistent state: that is the atomicity guarantee.
 */
export class CommandDispatcher {
  readonly catalog = new DatabaseCatalog();
  readonly cursors = new CursorRegistry();
  private readonly handlers = new Map<string, CommandHandler>(
    Object.entries({ ...handshakeCommands, ...writeCommands, ...findAndModifyCommands, ...readCommands, ...adminCommands }),
  );

  /** @param clock the server's time, epoch ms (`$$NOW` of every command). */
  constructor(private readonly clock: () => number = Date.now) {}

  /** Runs one command; never throws. `defaultDb` applies when the command has no `$db`. */
  execute(cmd: Document, origin: CommandOrigin, defaultDb = 'admin'): Document {
    const name = Object.keys(cmd)[0];
    try {
      if (name === undefined) throw new CommandError('CommandNotFound', "no such command: ''");
      const handler = this.handlers.get(name);
      if (!handler) throw new CommandError('CommandNotFound', `no such command: '${name}'`);
      if (cmd.txnNumber !== undefined || cmd.startTransaction !== undefined || cmd.autocommit !== undefined) {
        throw new CommandError('IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos');
      }
      const db: unknown = cmd.$db ?? defaultDb;
      if (typeof db !== 'string') throw new CommandError('TypeMismatch', "BSON field '$db' is the wrong type, expected type 'string'");
      const ctx: CommandContext = {
        catalog: this.catalog,
        cursors: this.cursors,
        db,
        now: new Date(this.clock()),
        connectionId: origin.connectionId,
        peer: origin.peer,
      };
      return handler(cmd, ctx);
    } catch (err) {
      if (err instanceof CommandError) return err.toReply();
      return new CommandError('InternalError', err instanceof Error ? err.message : String(err)).toReply();
    }
  }

  /** Deletes documents whose TTL index says they expired; returns how many. */
  sweepExpired(now: Date): number {
    let removed = 0;
    for (const collection of this.catalog.everyCollection()) {
      for (const doc of collection.expired(now)) {
        collection.remove(doc);
        removed++;
      }
    }
    return removed;
  }
}
