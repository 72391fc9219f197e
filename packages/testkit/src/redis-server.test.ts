import { createRedisConnection } from '@tickfleet/queues';
import { createServer, type Server } from 'node:net';
import { freePort } from './free-port.js';
import { launchOnFreePort, startRestartableRedis } from './redis-server.js';
import { tempDir } from './temp-dir.js';

async function withClient<T>(url: string, fn: (c: ReturnType<typeof createRedisConnection>) => Promise<T>): Promise<T> {
  const c = createRedisConnection(url, { blocking: false });
  try {
    return await fn(c);
  } finally {
    c.disconnect();
  }
}

describe('startRestartableRedis', () => {
  it.each([
    { aof: true, survives: 'v' },
    { aof: false, survives: null },
  ])('restarts on the same port after SIGKILL; a key written before survives only with the AOF (aof=$aof)', async ({ aof, survives }) => {
    const dir = tempDir();
    const redis = await startRestartableRedis({ aof, dir: dir.file('redis') });
    try {
      await withClient(redis.url, (c) => c.set('k', 'v'));
      await redis.kill();
      expect(redis.running).toBe(false);
      await redis.start();
      expect(redis.running).toBe(true);
      expect(await withClient(redis.url, (c) => c.get('k'))).toBe(survives);
    } finally {
      await redis.stop();
      dir.remove();
    }
  });

  it('refuses an AOF without a directory to keep it in', async () => {
    await expect(startRestartableRedis({ aof: true })).rejects.toThrow(/`dir` is required/);
  });
});

/** A TCP server holding a port, as another process would between `freePort` and redis's bind. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return { port, server };
}

const plainArgs = (port: number): string[] => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];

describe('launchOnFreePort', () => {
  it('starts the server again on another port when the one it was given is taken before it binds', async () => {
    const held = await holdPort();
    const picked: number[] = [];
    const pick = async () => {
      const port = picked.length === 0 ? held.port : await freePort();
      picked.push(port);
      return port;
    };
    const node = await launchOnFreePort(plainArgs, pick);
    try {
      expect(picked.length).toBe(2);
      expect(node.port).toBe(picked[1]);
      expect(await withClient(`redis://127.0.0.1:${node.port}`, (c) => c.ping())).toBe('PONG');
    } finally {
      node.child.kill('SIGTERM');
      await node.exited;
      held.server.close();
    }
  });

  it('does not take another redis-server answering on its port for the one it started', async () => {
    const other = await startRestartableRedis();
    let first = true;
    const pick = async () => {
      if (!first) return freePort();
      first = false;
      return other.port;
    };
    const node = await launchOnFreePort(plainArgs, pick);
    try {
      expect(node.port).not.toBe(other.port);
      const pid = await withClient(`redis://127.0.0.1:${node.port}`, async (c) => /process_id:(\d+)/.exec(await c.info('server'))?.[1]);
      expect(Number(pid)).toBe(node.child.pid);
      expect(other.running).toBe(true);
    } finally {
      node.child.kill('SIGTERM');
      await node.exited;
      await other.stop();
    }
  });

  it('gives up after 5 attempts, naming the port and the reason redis-server gave', async () => {
    const held = await holdPort();
    let attempts = 0;
    const pick = async () => {
      attempts += 1;
      return held.port;
    };
    try {
      await expect(launchOnFreePort(plainArgs, pick)).rejects.toThrow(
        new RegExp(`redis-server on ${held.port} exited \\(1\\) before it answered: [\\s\\S]*Address already in use`),
      );
      expect(attempts).toBe(5);
    } finally {
      held.server.close();
    }
  });
});
