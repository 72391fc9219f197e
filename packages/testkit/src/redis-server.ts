import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { startLocalRedis, startRedisOnPort } from '@tickfleet/queues';
import { isRunning } from './child-process.js';
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
  const launched = await startLocalRedis(argsFor);
  const port = launched.port;
  let { child, exited } = launched;

  // A restart binds the same port again, which the killed server released.
  const start = async (): Promise<void> => {
    if (isRunning(child)) throw new FixtureError(`redis-server on ${port}`, `redis-server on ${port} is already running`);
    ({ child, exited } = await startRedisOnPort(port, argsFor(port)));
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (isRunning(child)) child.kill(signal);
    await exited;
  };

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    aof,
    get running() {
      return isRunning(child);
    },
    namespace: () => `t${randomUUID().slice(0, 8)}`,
    kill,
    start,
    stop: () => kill('SIGTERM'),
  };
}
