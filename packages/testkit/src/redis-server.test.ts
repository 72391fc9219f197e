import { createRedisConnection } from '@tickfleet/queues';
import { startRestartableRedis } from './redis-server.js';
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
