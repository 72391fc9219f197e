import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';
import { FixtureError } from './testkit-error.js';

const run = promisify(execFile);

export interface TestRedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` (what `createRedisConnection` takes). */
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

/**
 * A real three-master Redis Cluster on loopback (redis-server and redis-cli from PATH), no
 * persistence, for tests that check tickfleet's keys and scripts work across cluster slots.
 */
export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'tickfleet-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      ports.push(port);
      children.push(
        spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--dir',
            dir,
            '--save',
            '',
            '--appendonly',
            'no',
            '--loglevel',
            'warning',
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) await waitPing(port);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) await waitClusterOk(port);
    return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitPing(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await run('redis-cli', ['-p', String(port), 'ping']).then(
      (r) => r.stdout.trim() === 'PONG',
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new FixtureError(`redis-server on ${port}`, `redis-server on ${port} did not answer`);
}

async function waitClusterOk(port: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const info = await run('redis-cli', ['-p', String(port), 'cluster', 'info']).then(
      (r) => r.stdout,
      () => '',
    );
    if (info.includes('cluster_state:ok')) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new FixtureError(`redis cluster node ${port}`, `redis cluster node ${port} did not reach cluster_state:ok`);
}
