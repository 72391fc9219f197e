import { startMockVenue, type MockVenue, type MockVenueOptions } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { openSink, Pipeline } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { FleetWorker, type FleetWorkerOptions } from '../src/fleet-worker.js';

/**
 * Real parts for one in-process FleetWorker test: a redis-server, a SQLite store and sink in a
 * temporary directory, and the venue emulation over HTTP. Each worker gets a fresh Redis namespace.
 */
export class InProcessRig {
  private current: { worker: FleetWorker; pipeline: Pipeline } | undefined;

  private constructor(
    readonly redis: TestRedis,
    readonly dir: TempDir,
    readonly mock: MockVenue,
    readonly store: StateStore,
    readonly conn: RedisClient,
  ) {}

  static async start(scenario: MockVenueOptions['scenario']): Promise<InProcessRig> {
    const redis = await startRedis();
    const dir = tempDir();
    const mock = await startMockVenue({ scenario });
    const store = await openStore(dir.sqliteUrl());
    return new InProcessRig(redis, dir, mock, store, createRedisConnection(redis.url));
  }

  /** Starts a worker in a new Redis namespace (its prefix returned), writing to `sinkFile` in the rig's directory. */
  async startWorker(
    options: { sinkFile?: string; adapterOptions?: FleetWorkerOptions['adapterOptions'] } = {},
  ): Promise<{ prefix: string; worker: FleetWorker }> {
    const prefix = this.redis.namespace();
    const logger = createLogger({ role: 'worker', level: 'silent' });
    const registry = createRegistry('worker', { defaultMetrics: false });
    const pipeline = new Pipeline({ sink: await openSink(this.dir.sqliteUrl(options.sinkFile ?? 'data.db')), logger, registry });
    const worker = new FleetWorker({
      redisUrl: this.redis.url,
      store: this.store,
      pipeline,
      logger,
      registry,
      prefix,
      ...(options.adapterOptions ? { adapterOptions: options.adapterOptions } : {}),
    });
    this.current = { worker, pipeline };
    await worker.start();
    return { prefix, worker };
  }

  async stopWorker(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    await current?.worker.stop(1000);
    await current?.pipeline.close();
  }

  async close(): Promise<void> {
    await this.stopWorker();
    await this.store.close();
    this.conn.disconnect();
    await this.mock.stop();
    await this.redis.stop();
    this.dir.remove();
  }
}
