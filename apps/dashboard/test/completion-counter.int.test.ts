import { Worker, type Job } from 'bullmq';
import { createRedisConnection } from '@tickfleet/queues';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { CompletionCounter } from '../src/internal/completion-counter.js';
import { connector, liveUnits, openTestFleet, testNow, type TestFleet } from './fleet-fixture.js';

let redis: TestRedis;
let dir: TempDir;
let fleet: TestFleet;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  dir = tempDir();
  fleet = await openTestFleet(redis.url, redis.namespace(), dir, testNow());
  await fleet.store.connectors.upsert(connector('binance', 1000));
  await fleet.queues.enqueue(liveUnits('binance', 'BTC/USDT', 6, fleet.now));
});
afterEach(async () => {
  await fleet.close();
  dir.remove();
});

/** Completes the next `returnValues.length` binance units through a real BullMQ worker, each with its return value. */
async function complete(...returnValues: unknown[]): Promise<Job[]> {
  const connection = createRedisConnection(redis.url);
  const worker = new Worker(fleet.queues.queue('binance').name, null, { connection, prefix: fleet.prefix, autorun: false });
  const done: Job[] = [];
  try {
    for (const [i, value] of returnValues.entries()) {
      const token = `t${i}`;
      const job = await worker.getNextJob(token);
      if (!job?.id) throw new Error(`no unit to complete (${i} of ${returnValues.length})`);
      await job.moveToCompleted(value, token, false);
      done.push(job);
    }
  } finally {
    await worker.close();
    await connection.quit();
  }
  return done;
}

describe('CompletionCounter', () => {
  it('counts units and their records from the completed set once each, from its first read on', async () => {
    await complete({ records: 500, outcome: 'ok' });
    const counter = new CompletionCounter(fleet.redis, fleet.queues);
    // The unit completed before the first read is the starting point, not counted.
    expect(await counter.read('binance')).toEqual({ units: 0, records: 0 });

    await complete({ records: 10, outcome: 'ok' }, { records: 20, outcome: 'ok' });
    expect(await counter.read('binance')).toEqual({ units: 2, records: 30 });
    // Read again: the same units (within the re-read slack) are not counted twice.
    expect(await counter.read('binance')).toEqual({ units: 2, records: 30 });

    // A return value without records (something other than a fleet worker) is a unit with none.
    await complete('done');
    expect(await counter.read('binance')).toEqual({ units: 3, records: 30 });
  });

  it('counts a unit retried from the board again when it completes again', async () => {
    const counter = new CompletionCounter(fleet.redis, fleet.queues);
    await counter.read('binance');
    const all = await complete(...Array.from({ length: 6 }, () => ({ records: 1, outcome: 'ok' })));
    expect(await counter.read('binance')).toEqual({ units: 6, records: 6 });
    // The retry button of the board: a completed unit goes back to the queue (the only one left there).
    await (await fleet.queues.queue('binance').getJob(all[2]!.id!))!.retry('completed');
    // A later millisecond: the counter tells a second completion of one id by its new completion time.
    await new Promise((r) => setTimeout(r, 5));
    const again = await complete({ records: 9, outcome: 'ok' });
    // Completed again under the same id (BullMQ scores it by the new completion time): it ran again.
    expect(again[0]!.id).toBe(all[2]!.id);
    expect(await counter.read('binance')).toEqual({ units: 7, records: 15 });
  });

  it('counts units whose completion time is behind the dashboard clock by less than the slack', async () => {
    // The dashboard's clock 20 s ahead of the worker's: each read starts 30 s before the newest time it saw.
    const counter = new CompletionCounter(fleet.redis, fleet.queues, 30_000, () => Date.now() + 20_000);
    await counter.read('binance');
    await complete({ records: 3, outcome: 'ok' });
    expect(await counter.read('binance')).toEqual({ units: 1, records: 3 });
  });
});
