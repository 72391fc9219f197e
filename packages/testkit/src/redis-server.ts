import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createConnection } from 'node:net';
import { freePort } from './free-port.js';

export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** A fresh namespace for key prefixes, so tests never share keys. */
  namespace(): string;
  stop(): Promise<void>;
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
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(port, child);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    namespace,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const spawnError = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`cannot start redis-server (is it on PATH?): ${err.message}`)));
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr}`);
    const ok = await Promise.race([tryConnect(port), spawnError]);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms: ${stderr}`);
}

function tryConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
