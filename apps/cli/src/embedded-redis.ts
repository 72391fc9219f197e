import { spawn } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { RedisUnavailableError } from '@tickfleet/core';

/** The private redis-server `tickfleet up` runs when REDIS_URL is unset. */
export interface EmbeddedRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** SIGTERM, then resolves once the process is gone. */
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` from PATH on a free loopback port for the quick start (`tickfleet up`
 * without REDIS_URL). Persistence is off: the scheduler rebuilds the queues from the state store
 * after a restart, so the quick start needs nothing Redis would keep. `dir` is the server's
 * working directory (where it would write anything at all).
 *
 * Tests start their servers with `@tickfleet/testkit` instead, which also restarts them and
 * turns the AOF on; this launcher stays here, beside its one user, because a production role
 * must not depend on the test kit.
 */
export async function startEmbeddedRedis(options: { dir?: string } = {}): Promise<EmbeddedRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'];
  if (options.dir) args.push('--dir', options.dir);
  const url = `redis://127.0.0.1:${port}`;
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // redis logs to stdout without a logfile (its reason for exiting, a port taken included); the
  // tail is kept for the error.
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-2000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) =>
      reject(new RedisUnavailableError(url, `cannot start redis-server (install it, or set REDIS_URL): ${err.message}`, { cause: err })),
    );
    child.once('exit', (code) => reject(new RedisUnavailableError(url, `redis-server exited with ${code}: ${output.trim()}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await Promise.race([canConnect(port), failed])) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new RedisUnavailableError(url, `redis-server did not listen on ${port} within 10 s`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  failed.catch(() => undefined);
  return {
    url,
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

/** A TCP port that was free on 127.0.0.1 a moment ago (for the embedded Redis and each role's health port). */
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
