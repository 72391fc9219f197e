import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { startRedis, waitFor, type TestRedis } from '@tickfleet/testkit';
import { batchQueueAdds } from './batched-add.js';
import { createRedisConnection, type RedisClient } from './redis-connection.js';

let redis: TestRedis;
let conn: RedisClient;
const queues: Queue[] = [];

beforeAll(async () => {
  redis = await startRedis();
  conn = createRedisConnection(redis.url);
});
afterEach(async () => {
  await Promise.all(queues.splice(0).map((q) => q.close()));
});
afterAll(async () => {
  await conn.quit();
  await redis.stop();
});

function queue(prefix: string, batched: boolean): Queue {
  const q = new Queue('{binance}', { connection: conn, prefix });
  queues.push(q);
  if (batched) expect(batchQueueAdds(q, conn)).toBe(true);
  return q;
}

/** Every key under `prefix` with its content; job hashes without their creation time, stream entries without their ids. */
async function dump(prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await conn.keys(`${prefix}:*`)).sort()) {
    const name = key.slice(prefix.length);
    const type = await conn.type(key);
    if (type === 'hash') {
      const { timestamp, ...rest } = await conn.hgetall(key);
      out[name] = { ...rest, timestamp: typeof timestamp };
    } else if (type === 'zset') out[name] = await conn.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'list') out[name] = await conn.lrange(key, 0, -1);
    else if (type === 'stream') out[name] = (await conn.xrange(key, '-', '+')).map(([, fields]) => fields);
    else if (type === 'string') out[name] = await conn.get(key);
    else out[name] = type;
  }
  return out;
}

/**
 * Counts the script calls (EVAL/EVALSHA) clients send on keys under `prefix` while `fn` runs, from
 * Redis's MONITOR feed; commands a script runs inside Redis are not counted.
 */
async function scriptCalls(prefix: string, fn: () => Promise<unknown>): Promise<number> {
  const monitor = await (conn as Redis).monitor();
  let calls = 0;
  let done = false;
  const marker = `${prefix}:done`;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (args[0] === 'echo' && args[1] === marker) done = true;
    if (source !== 'lua' && /^eval/i.test(args[0] ?? '') && args.some((a) => a.startsWith(`${prefix}:`))) calls++;
  });
  try {
    await fn();
    await conn.echo(marker);
    await waitFor(() => done, 'the monitor feed reached the end of the calls');
  } finally {
    monitor.disconnect();
  }
  return calls;
}

const jobs = (n: number, extra: (i: number) => JobsOptions = () => ({})): Array<{ name: string; data: object; opts: JobsOptions }> =>
  Array.from({ length: n }, (_, i) => ({
    name: i % 2 ? 'incremental' : 'backfill',
    data: { venue: 'binance', symbol: `S${i}/USDT`, from: 1000 * i, nested: { list: [i, `x${i}`] } },
    // Every third without a priority: BullMQ's standard script; the others its prioritized one.
    opts: { jobId: `unit-${i}`, priority: i % 3 ? 1 + (i % 5) : undefined, attempts: 5, removeOnComplete: { age: 3600, count: 1000 }, ...extra(i) },
  }));

describe('batchQueueAdds', () => {
  it("writes exactly what BullMQ's own addBulk writes, 250 jobs per script call", async () => {
    const plain = redis.namespace();
    const batched = redis.namespace();
    const input = jobs(600);
    await queue(plain, false).addBulk(input);
    const q = queue(batched, true);
    const calls = await scriptCalls(batched, async () => {
      const added = await q.addBulk(input);
      expect(added.map((j) => j.id)).toEqual(input.map((j) => j.opts.jobId));
    });
    expect(calls).toBe(3);
    const [a, b] = [await dump(plain), await dump(batched)];
    expect(Object.keys(b)).toHaveLength(Object.keys(a).length);
    expect(b).toEqual(a);
    expect(Object.keys(b)).toEqual(expect.arrayContaining([':{binance}:unit-599', ':{binance}:prioritized', ':{binance}:wait', ':{binance}:events']));
    expect(await q.getJobCounts('prioritized', 'waiting')).toEqual({ prioritized: 400, waiting: 200 });

    // Adding the same ids again changes nothing but the events, as with BullMQ's own path.
    await queue(plain, false).addBulk(input.slice(0, 10));
    await q.addBulk(input.slice(0, 10));
    expect(await dump(batched)).toEqual(await dump(plain));
  });

  it("sends an addBulk holding a delayed job through BullMQ's own path, one call per job", async () => {
    const plain = redis.namespace();
    const batched = redis.namespace();
    const input = jobs(4, (i) => (i === 2 ? { delay: 60_000 } : {}));
    await queue(plain, false).addBulk(input);
    const q = queue(batched, true);
    expect(await scriptCalls(batched, () => q.addBulk(input))).toBe(4);
    expect(await q.getJobState('unit-2')).toBe('delayed');
    // The same keys (the delayed set's score is the add time plus the delay, so not compared).
    expect(Object.keys(await dump(batched))).toEqual(Object.keys(await dump(plain)));
  });
});
