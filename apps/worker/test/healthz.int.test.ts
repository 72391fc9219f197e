import { FleetVenueControl } from '@tickfleet/budget';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { FleetWorker, type VenueHealthz } from '../src/fleet-worker.js';

/**
 * A worker's `/healthz` per served venue: besides its share and units, the connector's status,
 * the venue's health with the last error, its freeze, AIMD value and budget, read from Redis and
 * the budget store; and with Redis stopped it still answers, naming what it could not read.
 */
describe('worker /healthz: per connector status, health, freeze, AIMD value and budget', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let store: StateStore;
  let sink: SqliteSink;
  let pipeline: Pipeline;
  let connection: RedisClient;
  let worker: FleetWorker;
  const prefix = `t${process.pid}hz`;

  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir('healthz-');
    store = await openStore(dir.sqliteUrl('state.db'));
    sink = new SqliteSink(dir.file('data.db'));
    pipeline = new Pipeline({ sink });
    connection = createRedisConnection(redis.url, { blocking: false });
    await store.connectors.upsert({
      venue: 'binance',
      baseUrl: 'http://127.0.0.1:1',
      rateLimit: { policy: 'fixed-window', limit: 1000, periodMs: 60_000, headroom: 1 },
      maxInflight: 4,
    });
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger: createLogger({ role: 'worker', level: 'warn' }),
      registry: createRegistry('worker'),
      prefix,
      workerId: 'healthz-worker',
    });
    await worker.start();
  }, 60_000);

  afterAll(async () => {
    await worker?.stop(5_000);
    connection?.disconnect();
    await pipeline?.close();
    await sink?.close();
    await store?.close();
    await redis?.stop();
    dir?.remove();
  });

  const binance = async (): Promise<VenueHealthz> => (await worker.venueHealthz()).find((v) => v.venue === 'binance')!;

  it('reports what the fleet knows of each served venue, fresh within its cache period', async () => {
    expect(await binance()).toMatchObject({
      venue: 'binance',
      status: 'active',
      cap: 4,
      localConcurrency: 4,
      inflight: 0,
      concurrency: 4,
      freeze: null,
      budget: { used: 0, limit: 1000 },
      health: { state: 'idle', lastError: null },
    });

    // Other workers report refused units and spend budget; an operator freezes the venue.
    const control = new FleetVenueControl(connection, { prefix });
    const refused = { ok: false, latencyMs: 2, cause: 'connection', message: 'binance klines request failed: connect ECONNREFUSED 127.0.0.1:1' } as const;
    await control.reportOutcomes('binance', [refused, refused, refused, refused, refused]);
    expect((await store.budgets.acquire('binance', 30)).ok).toBe(true);
    const failing = await waitFor(async () => {
      const v = await binance();
      return v.health?.state === 'failing' ? v : null;
    }, '/healthz: binance failing');
    expect(failing).toMatchObject({
      status: 'active',
      budget: { used: 30, limit: 1000 },
      health: { failureStreak: 5, window: { failed: 5, byCause: { connection: 5 } }, lastError: { cause: 'connection' } },
    });
    expect(failing.unread).toBeUndefined();
    const until = Date.now() + 600_000;
    await control.freeze('binance', until, 'manual');
    const frozen = await waitFor(async () => {
      const v = await binance();
      return v.health?.state === 'frozen' ? v : null;
    }, '/healthz: binance frozen');
    expect(frozen.freeze).toEqual({ untilMs: until, cause: 'manual' });
    expect(frozen.health!.reason).toMatch(/^frozen \(manual\) for /);
  });

  it('answers while Redis does not, naming what it could not read and keeping what the process knows', async () => {
    const pid = Number(/^process_id:(\d+)/m.exec(await connection.info('server'))?.[1]);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGSTOP');
    try {
      // Once the cached read is older than its period, a new read misses its deadline: the answer
      // comes anyway, with the fields Redis feeds left null and the budget from the store.
      const blind = await waitFor(async () => {
        const v = await binance();
        return v.unread ? v : null;
      }, '/healthz without Redis');
      expect(blind).toMatchObject({
        venue: 'binance',
        status: 'active',
        cap: 4,
        inflight: 0,
        concurrency: null,
        health: null,
        freeze: null,
        budget: { used: 30, limit: 1000 },
        unread: ['redis: no answer within 1000 ms'],
      });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor(async () => {
      const v = await binance();
      return v.unread === undefined && v.health?.state === 'frozen';
    }, '/healthz with Redis back');
  });
});
