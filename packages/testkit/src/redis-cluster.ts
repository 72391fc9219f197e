import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRedisConnection, startLocalRedis, type LocalRedisServer } from '@tickfleet/queues';
import { isRunning } from './child-process.js';
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
  const nodes: LocalRedisServer[] = [];
  const stop = async (): Promise<void> => {
    for (const node of nodes) if (isRunning(node.child)) node.child.kill('SIGTERM');
    await Promise.all(nodes.map((node) => node.exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const node = await startLocalRedis((port) => [
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
      ]);
      nodes.push(node);
    }
    const ports = nodes.map((node) => node.port);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) await waitClusterOk(port);
    return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Waits up to 30 s for `CLUSTER INFO` to say cluster_state:ok (one connection, polled). */
async function waitClusterOk(port: number): Promise<void> {
  const client = createRedisConnection(`redis://127.0.0.1:${port}`, { blocking: false });
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() <= deadline) {
      const info = await client.call('CLUSTER', 'INFO').then(String, () => '');
      if (info.includes('cluster_state:ok')) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    client.disconnect();
  }
  throw new FixtureError(`redis cluster node ${port}`, `redis cluster node ${port} did not reach cluster_state:ok within 30 s`);
}
