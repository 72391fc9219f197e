import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { freePort } from './free-port.js';
import { FixtureError } from './testkit-error.js';

export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** A fresh namespace for key prefixes, so tests never share keys. */
  namespace(): string;
  stop(): Promise<void>;
}

export interface RestartableRedisOptions {
  /**
   * Append-only file persistence in `dir`, fsynced on every write (`appendfsync always`): a
   * SIGKILL then loses nothing Redis acknowledged. With the default `everysec`, a loaded machine
   * makes Redis postpone its AOF writes by up to 2 s, and a kill loses them. @defaultValue false
   */
  aof?: boolean;
  /** Working directory of the server (the AOF lives here); required with `aof`. */
  dir?: string;
}

/** A private redis-server that a chaos test can kill and start again on the same port. */
export interface RestartableRedis extends TestRedis {
  readonly aof: boolean;
  /** Whether the server process is running. */
  readonly running: boolean;
  /** Sends `signal` (default SIGKILL: no shutdown save) and waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port with the same options (the AOF, if any, is loaded). */
  start(): Promise<void>;
}

/**
 * A private `redis-server` (from PATH) on a free port with persistence off, or the server at
 * `REDIS_URL` when set (then `stop` leaves it running; isolation comes from `namespace()`).
 */
export async function startRedis(): Promise<TestRedis> {
  const namespace = (): string => `t${randomUUID().slice(0, 8)}`;
  const external = process.env.REDIS_URL;
  if (external) {
    const u = new URL(external);
    return { url: external, port: Number(u.port || 6379), namespace, stop: async () => undefined };
  }
  // The same private server a chaos test restarts, without the restart controls: a test that
  // only needs a Redis cannot kill it by mistake.
  const server = await startRestartableRedis();
  return { url: server.url, port: server.port, namespace, stop: () => server.stop() };
}

/**
 * A private `redis-server` this process owns (never `REDIS_URL`: a chaos test kills it), on a
 * port that stays the same across {@link RestartableRedis.kill} and {@link RestartableRedis.start},
 * so clients reconnect to the same URL as they would to a restarted production server.
 */
export async function startRestartableRedis(options: RestartableRedisOptions = {}): Promise<RestartableRedis> {
  const aof = options.aof ?? false;
  if (aof && !options.dir)
    throw new FixtureError('startRestartableRedis', 'startRestartableRedis: `dir` is required with `aof: true` (the AOF must survive the restart)');
  if (options.dir) mkdirSync(options.dir, { recursive: true });
  const argsFor = (port: number): string[] => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--protected-mode', 'no', '--loglevel', 'warning'];
    args.push('--appendonly', aof ? 'yes' : 'no');
    if (aof) args.push('--appendfsync', 'always');
    if (options.dir) args.push('--dir', options.dir);
    return args;
  };
  const launched = await launchOnFreePort(argsFor);
  const port = launched.port;
  let { child, exited } = launched;

  // A restart binds the same port again, which the killed server released.
  const start = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) throw new FixtureError(`redis-server on ${port}`, `redis-server on ${port} is already running`);
    ({ child, exited } = await launch(port, argsFor(port)));
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    aof,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    namespace: () => `t${randomUUID().slice(0, 8)}`,
    kill,
    start,
    stop: () => kill('SIGTERM'),
  };
}

/** A redis-server this process started, answering on its port. */
export interface LaunchedRedis {
  port: number;
  child: ChildProcess;
  /** Settles when the process has exited. */
  exited: Promise<void>;
}

/** Attempts {@link launchOnFreePort} makes before it gives up. */
const LAUNCH_ATTEMPTS = 5;

/**
 * Starts redis-server with `argsFor(port)` on a port {@link freePort} found free, and waits until
 * that server answers. Another process can take the port between `freePort` and the server's bind
 * (an outgoing connection's local port, or another suite's server, when a test run starts hundreds
 * of servers and sockets): a server that exits before it answers, or a port answered by another
 * server, is retried on a new port, up to 5 attempts, the last error naming the port and the
 * server's output. `pickPort` replaces `freePort` (tests).
 */
export async function launchOnFreePort(argsFor: (port: number) => string[], pickPort: () => Promise<number> = freePort): Promise<LaunchedRedis> {
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort();
    try {
      return { port, ...(await launch(port, argsFor(port))) };
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt >= LAUNCH_ATTEMPTS) throw err;
    }
  }
}

/** The server could not have the port: it exited before answering, or another server answered there. */
class PortTakenError extends FixtureError {}

/** Time a starting server has to answer PING (a restart with an AOF loads it first). */
const LAUNCH_DEADLINE_MS = 20_000;

/**
 * Spawns redis-server with `args` and waits until it answers PING on `port`, then checks that the
 * server answering is this process (`process_id` of `INFO server`), not another one holding the
 * port. Rejects with a {@link PortTakenError} when it exits first (its output, with redis's own
 * reason, in the message) or another server answered; with a plain {@link FixtureError} when it
 * cannot be spawned or does not answer within 20 s.
 */
async function launch(port: number, args: string[]): Promise<Omit<LaunchedRedis, 'port'>> {
  const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // redis logs to stdout without a logfile; the tail is kept for the error message.
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-2000);
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const failed = new Promise<never>((_, reject) => {
    proc.once('error', (err) => reject(new FixtureError('redis-server', `cannot start redis-server (install it): ${err.message}`, { cause: err })));
    proc.once('exit', (code, signal) =>
      reject(new PortTakenError(`redis-server on ${port}`, `redis-server on ${port} exited (${code ?? signal}) before it answered: ${output.trim()}`)),
    );
  });
  failed.catch(() => undefined);
  const deadline = Date.now() + LAUNCH_DEADLINE_MS;
  while (!(await Promise.race([canPing(port), failed]))) {
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new FixtureError(`redis-server on ${port}`, `redis-server did not answer PING on ${port} within 20 s (loading the AOF?): ${output.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  let answering = await Promise.race([serverPid(port), failed]);
  while (answering === null) {
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new FixtureError(`redis-server on ${port}`, `redis-server on ${port} answered PING but not INFO within 20 s: ${output.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
    answering = await Promise.race([serverPid(port), failed]);
  }
  if (answering !== proc.pid) {
    proc.kill('SIGKILL');
    await exited;
    throw new PortTakenError(
      `redis-server on ${port}`,
      `port ${port} is answered by another redis-server (pid ${answering}), not the one started (pid ${proc.pid})`,
    );
  }
  return { child: proc, exited };
}

/** The `process_id` of the server answering on `port` (INFO server), or null when it did not tell. */
function serverPid(port: number): Promise<number | null> {
  return ask(port, 'INFO server', 5000, null, (reply) => {
    if (reply.startsWith('-')) return null;
    const m = /process_id:(\d+)\r\n/.exec(reply);
    return m ? Number(m[1]) : undefined;
  });
}

/** Whether a server on `port` answers PING (a server still loading its AOF answers -LOADING). */
function canPing(port: number): Promise<boolean> {
  return ask(port, 'PING', 1000, false, (reply) => (reply.includes('\r\n') ? reply.startsWith('+PONG') : undefined));
}

/**
 * Sends one inline `command` on a new connection to `port`; `answer` reads the reply received so
 * far (undefined: wait for more). `otherwise` when the connection fails or `timeoutMs` passes.
 */
function ask<T>(port: number, command: string, timeoutMs: number, otherwise: T, answer: (reply: string) => T | undefined): Promise<T> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    let buf = '';
    const done = (value: T): void => {
      s.destroy();
      resolve(value);
    };
    s.setTimeout(timeoutMs, () => done(otherwise));
    s.once('connect', () => s.write(`${command}\r\n`));
    s.on('data', (d: Buffer) => {
      buf += d.toString();
      const value = answer(buf);
      if (value !== undefined) done(value);
    });
    s.once('error', () => done(otherwise));
  });
}
