import { startMongoWire, type MongoWireHandle } from '@tickfleet/mongo-wire';
import { freePort, isRunning, spawnCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';

/**
 * A worker started while its MongoDB store does not answer yet (the 8-worker step of the hosts'
 * scale scenario: eight processes starting at once beside a loaded store host) waits for the
 * store instead of exiting, and is ready once the store is.
 */
describe('worker start with the store not answering yet', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mongo: MongoWireHandle | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir('worker-start-');
  });
  afterAll(async () => {
    await mongo?.stop();
    await redis?.stop();
    dir?.remove();
  });

  it('retries the store until it answers, then becomes ready', async () => {
    const port = await freePort();
    const child = spawnCli(['worker'], {
      env: {
        REDIS_URL: redis.url,
        TICKFLEET_PREFIX: `t${process.pid}ws`,
        TICKFLEET_STORE_URL: `mongodb://127.0.0.1:${port}/state`,
        TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'),
        TICKFLEET_SPOOL_DIR: dir.file('spool'),
        TICKFLEET_HEALTH_PORT: String(await freePort()),
        LOG_LEVEL: 'info',
      },
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => out.includes('store unreachable at start; retrying') || !isRunning(child), 'the first failed store open', { timeoutMs: 60_000 });
      if (!isRunning(child)) throw new Error(out);
      mongo = await startMongoWire({ port });
      await waitFor(() => out.includes('worker ready') || !isRunning(child), 'worker ready', { timeoutMs: 60_000 });
      expect(out).toContain('worker ready');
    } finally {
      child.kill('SIGKILL');
    }
  }, 150_000);
});
