import { startLocalRedis } from '@tickfleet/queues';

/** The private redis-server `tickfleet up` runs when REDIS_URL is unset. */
export interface EmbeddedRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** The server's process id (checked against `INFO server` when it started), for the watchdog. */
  pid: number;
  /** SIGTERM, then resolves once the process is gone. */
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` from PATH on a free loopback port for the quick start (`tickfleet up`
 * without REDIS_URL), through the launcher the tests' servers use (`startLocalRedis`: another
 * port when the first is taken before redis binds it, redis's own reason in the error).
 * Persistence is off: the scheduler rebuilds the queues from the state store after a restart, so
 * the quick start needs nothing Redis would keep. `dir` is the server's working directory (where
 * it would write anything at all).
 */
export async function startEmbeddedRedis(options: { dir?: string } = {}): Promise<EmbeddedRedis> {
  const { port, child, exited } = await startLocalRedis((p) => {
    const args = ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'];
    if (options.dir) args.push('--dir', options.dir);
    return args;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    // A server that answered as this process has a pid.
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
