import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a private `redis-server` from PATH on a free loopback port (`tickfleet up`, and one per
 * test suite). Persistence is off: the scheduler rebuilds queues from the state store after a
 * restart, and tests want a clean server.
 */
export async function startRedisServer(options: { dir?: string } = {}): Promise<RedisServer> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'];
  if (options.dir) args.push('--dir', options.dir);
  const child = spawn('redis-server', args, {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`cannot start redis-server (install it, or set REDIS_URL): ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${stderr.trim()}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await Promise.race([canConnect(port), failed])) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not listen on ${port} within 10 s`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  failed.catch(() => undefined);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}
