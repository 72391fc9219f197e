import type { RedisClient } from '@tickfleet/queues';
import type { ChildProcess } from 'node:child_process';
import { Worker } from 'bullmq';
import { createRedisConnection, queueNameFor, type QueuedUnit } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { freePort, isRunning, spawnCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';

/**
 * Two `tickfleet scheduler` processes share one Redis and one SQLite store; the test plays the
 * worker. SIGKILL the leader: the follower must lead within a few seconds and units keep flowing,
 * none twice. SIGTERM the survivor: it exits 0 and frees the leader lock at once.
 */
describe('scheduler failover (real processes)', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let store: StateStore;
  let conn: RedisClient;
  let worker: Worker<QueuedUnit> | undefined;
  let workerConn: RedisClient | undefined;
  const children: ChildProcess[] = [];
  const prefix = `t${Date.now().toString(36)}`;
  const LEADER_TTL_MS = 1500;

  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir();
    store = await openStore(dir.sqliteUrl());
    conn = createRedisConnection(redis.url);
    await store.connectors.upsert({ venue: 'kraken', baseUrl: 'https://kraken.example', rateLimit: { limit: 100, periodMs: 1000 } });
    await store.jobs.upsert({ venue: 'kraken', type: 'book', symbol: 'XBT/USD' });
  });

  afterAll(async () => {
    for (const c of children) if (isRunning(c)) c.kill('SIGKILL');
    await worker?.close();
    await workerConn?.quit();
    await conn.quit();
    await store.close();
    dir.remove();
    await redis.stop();
  });

  async function start(): Promise<{ child: ChildProcess; port: number; exited: Promise<number | null> }> {
    const port = await freePort();
    const child = spawnCli(['scheduler', '--tick', '200ms', '--port', String(port)], {
      env: {
        REDIS_URL: redis.url,
        TICKFLEET_STORE_URL: dir.sqliteUrl(),
        TICKFLEET_PREFIX: prefix,
        TICKFLEET_SCHEDULER_LEADER_TTL_MS: String(LEADER_TTL_MS),
        TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '500',
        TICKFLEET_SCHEDULER_JITTER_MS: '0',
        TICKFLEET_HEALTH_HOST: '127.0.0.1',
      },
    });
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { child, port, exited };
  }

  async function isLeader(port: number): Promise<boolean | undefined> {
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return /tickfleet_scheduler_is_leader\{role="scheduler"\} 1/.test(text);
    } catch {
      return undefined;
    }
  }

  it('fails over to a follower by itself after a SIGKILL, without duplicate units', async () => {
    const processed: QueuedUnit[] = [];
    const ids: string[] = [];
    workerConn = createRedisConnection(redis.url);
    worker = new Worker<QueuedUnit>(
      queueNameFor('kraken'),
      async (job) => {
        processed.push(job.data);
        ids.push(job.id!);
        await store.jobs.complete(job.data.jobId, { nextRunAt: job.data.nextRunAt! });
      },
      { connection: workerConn, prefix },
    );

    const a = await start();
    const b = await start();
    const [leader, follower] = await waitFor(
      async () => {
        const [la, lb] = await Promise.all([isLeader(a.port), isLeader(b.port)]);
        if (la === undefined || lb === undefined || la === lb) return undefined;
        return la ? [a, b] : [b, a];
      },
      'exactly one of two schedulers to lead',
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await waitFor(() => processed.length >= 2, 'units from the first leader', { timeoutMs: 60_000 });

    leader.child.kill('SIGKILL');
    await leader.exited;
    // The lock lapses at most LEADER_TTL_MS after the last renewal and the follower tries every
    // 200 ms (~1.7 s on an idle machine); how long is a benchmark's business, not this test's:
    // it checks that the follower takes over by itself and that no unit is enqueued twice.
    await waitFor(() => isLeader(follower.port), 'the follower to lead', { timeoutMs: 60_000, intervalMs: 50 });

    const before = processed.length;
    await waitFor(() => processed.length >= before + 2, 'units from the new leader', { timeoutMs: 60_000 });
    expect(new Set(ids).size).toBe(ids.length);
    const dues = processed.map((u) => u.dueAt!);
    for (let i = 1; i < dues.length; i++) expect(dues[i]).toBeGreaterThan(dues[i - 1]!);

    follower.child.kill('SIGTERM');
    expect(await follower.exited).toBe(0);
    expect(await conn.exists(`${prefix}:scheduler:leader`)).toBe(0);
  }, 300_000);

  it('refuses a bad configuration naming the variable', async () => {
    const child = spawnCli(['scheduler'], { env: { REDIS_URL: 'http://nope', TICKFLEET_STORE_URL: dir.sqliteUrl() } });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toContain('invalid configuration REDIS_URL');
  });
});
