import { resolve } from 'node:path';
import { ConfigError, NotFoundError, type SpoolLockedError, TickfleetError, ValidationError } from '@tickfleet/core';
import { cliEnv } from './cli-env.js';

/**
 * Turning errors into what an operator reads at the process edge: one line naming the argument or
 * variable, exit 2 for bad input and configuration, 1 for everything else. Driver and system
 * errors are recognised by their `code`/`syscall` fields, never by message text.
 */

type SystemError = Error & { code?: string; syscall?: string; path?: string; hostname?: string; port?: number; address?: string };

export function errorExitCode(err: unknown): number {
  return err instanceof ValidationError || err instanceof ConfigError || err instanceof NotFoundError ? 2 : 1;
}

/** The message on one line; a stack only when LOG_LEVEL asks for debugging. */
export function oneLineError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (debugging() && !(err instanceof TickfleetError) && err.stack) return err.stack;
  const code = (err as SystemError).code;
  const text = err.message.replace(/\s*\n\s*/g, ' ');
  return err instanceof TickfleetError || code === undefined || text.includes(code) ? text : `${text} (${code})`;
}

function debugging(): boolean {
  try {
    const { LOG_LEVEL } = cliEnv('LOG_LEVEL');
    return LOG_LEVEL === 'debug' || LOG_LEVEL === 'trace';
  } catch (err) {
    // A bad LOG_LEVEL is itself reported as the command's error; here it only means no stack.
    if (err instanceof ConfigError) return false;
    throw err;
  }
}

/** Driver and system codes meaning the path names something that is not a usable database file. */
const WRONG_FILE_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_IOERR', 'EACCES', 'EISDIR', 'ENOTDIR', 'EROFS']);

/**
 * A store or sink file that cannot be opened (not a database, unreadable, a directory) becomes a
 * ValidationError naming the argument (`--store (TICKFLEET_STORE_URL)` by default).
 */
export function storeOpenError(url: string, err: unknown, argument = '--store (TICKFLEET_STORE_URL)'): unknown {
  // The store may wrap the driver's error (StoreUnavailableError with the SqliteError as cause).
  const driver = (err instanceof TickfleetError ? err.cause : err) as SystemError | undefined;
  const code = driver?.code;
  if (typeof code === 'string' && WRONG_FILE_CODES.has(code)) {
    return new ValidationError(argument, `an SQLite database file this process can open and write (${code}: ${driver?.message ?? ''})`, url);
  }
  return err;
}

/**
 * A role's server could not listen: a port in use or a host that does not resolve or is not an
 * address of this machine becomes a ConfigError naming the variable.
 */
export function listenError(err: unknown, vars: { port: string; host: string }): unknown {
  const e = err as SystemError | undefined;
  if (!e || typeof e.code !== 'string') return err;
  if (e.code === 'EADDRINUSE') return badSetting(vars.port, `a free port (${e.port ?? '?'} is in use)`);
  if (e.code === 'EACCES' && e.syscall === 'listen') return badSetting(vars.port, `a port this user may listen on (${e.port ?? '?'} is privileged)`);
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' || e.code === 'EADDRNOTAVAIL' || (e.syscall === 'getaddrinfo' && e.code !== undefined)) {
    return badSetting(vars.host, `an address of this machine to listen on, such as 127.0.0.1 or 0.0.0.0 (${e.hostname ?? e.address ?? 'host'}: ${e.code})`);
  }
  return err;
}

/** The worker's spool directory could not be created or written (e.g. `/dev/null`). */
export function spoolDirError(err: unknown, spoolDir: string): unknown {
  const e = err as SystemError | undefined;
  if (!e || typeof e.path !== 'string' || typeof e.code !== 'string') return err;
  const base = resolve(spoolDir);
  if (resolve(e.path) === base || resolve(e.path).startsWith(`${base}/`)) {
    return new ConfigError('TICKFLEET_SPOOL_DIR', `a directory the worker can create and write (${e.code} at ${e.path})`);
  }
  return err;
}

/**
 * A spool directory another live process writes: for the operator, a spool directory setting
 * that names one in use (exit 2, naming `spoolDir` and the holder's pid).
 */
export function lockedSpoolError(err: SpoolLockedError): ConfigError {
  return new ConfigError(
    'spoolDir',
    err.holderPid === undefined
      ? `a lockable spool directory (${err.dir})`
      : `a spool directory no other live process writes (${err.dir} is held by pid ${err.holderPid})`,
  );
}

/** An argument (`--port`) is a ValidationError, an environment variable a ConfigError. */
function badSetting(name: string, expected: string): Error {
  return name.startsWith('--') ? new ValidationError(name, expected) : new ConfigError(name, expected);
}
