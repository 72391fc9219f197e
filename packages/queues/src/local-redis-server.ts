import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { RedisUnavailableError } from '@tickfleet/core';
import { REDIS_DEFAULTS } from './redis-defaults.js';

/**
 * A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it). Another process may take
 * it before the caller binds: {@link startLocalRedis} retries on a new one when that happens.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      // A server listening on a TCP address always reports an AddressInfo.
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A redis-server this process started on loopback, answering on its port. */
export interface LocalRedisServer {
  port: number;
  child: ChildProcess;
  /** Settles when the process has exited. */
  exited: Promise<void>;
}

export interface StartLocalRedisOptions {
  /** Replaces {@link freePort} (tests). */
  pickPort?: () => Promise<number>;
  /** @defaultValue {@link REDIS_DEFAULTS.localStartAttempts} */
  attempts?: number;
}

/**
 * Starts `redis-server` (from PATH) with `argsFor(port)` on a port {@link freePort} found free,
 * and waits until that server answers: `tickfleet up`'s private Redis and every test's. Another
 * process can take the port between `freePort` and the server's bind (an outgoing connection's
 * local port, another server started at the same moment): a server that exits before it answers,
 * or a port where another redis-server answers, is retried on a new port, up to `attempts` times;
 * the last error names the port and carries redis's own output.
 */
export async function startLocalRedis(argsFor: (port: number) => string[], options: StartLocalRedisOptions = {}): Promise<LocalRedisServer> {
  const attempts = options.attempts ?? REDIS_DEFAULTS.localStartAttempts;
  for (let attempt = 1; ; attempt++) {
    const port = await (options.pickPort ?? freePort)();
    try {
      return await startRedisOnPort(port, argsFor(port));
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt >= attempts) throw err;
    }
  }
}

/** The server could not have its port: it exited before answering, or another server answered there. */
class PortTakenError extends RedisUnavailableError {}

/** Time a starting server has to answer PING (a restart with an AOF loads it first). */
const READY_WITHIN_MS = 20_000;

/**
 * Spawns redis-server with `args` and waits until it answers PING on `port`, then checks that the
 * server answering is this process (`process_id` of `INFO server`), not another one holding the
 * port. A restart on a known port calls this directly. Rejects with a {@link RedisUnavailableError}:
 * redis-server missing, exited first (its output, with redis's own reason, in the message),
 * another server answering, or no answer within 20 s.
 */
export async function startRedisOnPort(port: number, args: string[]): Promise<LocalRedisServer> {
  const url = `redis://127.0.0.1:${port}`;
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
    proc.once('error', (err) =>
      reject(new RedisUnavailableError(url, `cannot start redis-server (install it, or set REDIS_URL to a running one): ${err.message}`, { cause: err })),
    );
    proc.once('exit', (code, signal) =>
      reject(new PortTakenError(url, `redis-server on ${port} exited (${code ?? signal}) before it answered: ${output.trim()}`)),
    );
  });
  failed.catch(() => undefined);
  // Until the server answers PING (not -LOADING), then INFO with its process id; one deadline.
  const deadline = Date.now() + READY_WITHIN_MS;
  const answeringPid = async (): Promise<number | null> => ((await Promise.race([canPing(port), failed])) ? Promise.race([serverPid(port), failed]) : null);
  let answering: number | null;
  while ((answering = await answeringPid()) === null) {
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      await exited;
      throw new RedisUnavailableError(url, `redis-server on ${port} did not answer PING and INFO within 20 s (loading the AOF?): ${output.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  if (answering !== proc.pid) {
    proc.kill('SIGKILL');
    await exited;
    throw new PortTakenError(url, `port ${port} is answered by another redis-server (pid ${answering}), not the one started (pid ${proc.pid})`);
  }
  return { port, child: proc, exited };
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
