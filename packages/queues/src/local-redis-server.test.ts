import { RedisUnavailableError } from '@tickfleet/core';
import { startRestartableRedis } from '@tickfleet/testkit';
import { createServer, type Server } from 'node:net';
import { createRedisConnection } from './redis-connection.js';
import { freePort, startLocalRedis } from './local-redis-server.js';

/** What the server on `port` answers: PING, and the process id in INFO server. */
async function answerOf(port: number): Promise<{ pong: string; pid: number }> {
  const client = createRedisConnection(`redis://127.0.0.1:${port}`, { blocking: false });
  try {
    return { pong: await client.ping(), pid: Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]) };
  } finally {
    client.disconnect();
  }
}

/** A TCP server holding a port, as another process would between `freePort` and redis's bind. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return { port, server };
}

const plainArgs = (port: number): string[] => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];

describe('startLocalRedis', () => {
  it('starts the server again on another port when the one it was given is taken before it binds', async () => {
    const held = await holdPort();
    const picked: number[] = [];
    const pick = async () => {
      const port = picked.length === 0 ? held.port : await freePort();
      picked.push(port);
      return port;
    };
    const node = await startLocalRedis(plainArgs, { pickPort: pick });
    try {
      expect(picked.length).toBe(2);
      expect(node.port).toBe(picked[1]);
      expect((await answerOf(node.port)).pong).toBe('PONG');
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
    const node = await startLocalRedis(plainArgs, { pickPort: pick });
    try {
      expect(node.port).not.toBe(other.port);
      expect((await answerOf(node.port)).pid).toBe(node.child.pid);
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
      const failure = startLocalRedis(plainArgs, { pickPort: pick });
      await expect(failure).rejects.toThrow(new RegExp(`redis-server on ${held.port} exited \\(1\\) before it answered: [\\s\\S]*Address already in use`));
      await expect(failure).rejects.toBeInstanceOf(RedisUnavailableError);
      expect(attempts).toBe(5);
    } finally {
      held.server.close();
    }
  });
});
