import type { ChildProcess } from 'node:child_process';
import { alignDown, type Backfill } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles, startMockVenue, type MockVenue, type MockVenueName, type VenueStats } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues, type QueuedUnit } from '@tickfleet/queues';
import { openSink, type Sink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { randomUUID } from 'node:crypto';
import { isRunning } from './child-process.js';
import { runCli, spawnCli, type CliResult } from './cli.js';
import { startRedisCluster } from './redis-cluster.js';
import { startRedis, startRestartableRedis, type RestartableRedis, type TestRedis } from './redis-server.js';
import { tempDir, type TempDir } from './temp-dir.js';
import { FixtureError } from './testkit-error.js';
import { waitFor } from './wait-for.js';
import { compareCandles, type CandleReport } from './candle-report.js';

export type { CandleReport };

export interface FleetProcess {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The warn and error lines of a tickfleet process's pino JSON output. */
export function warningLines(output: string): string[] {
  return output.split('\n').filter((l) => /"level":"(warn|error)"/.test(l));
}

/** The health port a worker printed in its `worker ready` line. */
export function healthPort(proc: FleetProcess): number {
  const m = /"healthPort":(\d+)/.exec(proc.output());
  if (!m) throw new Error(`${proc.name} printed no health port`);
  return Number(m[1]);
}

/** A ready worker's `/healthz` body. */
export async function workerHealthz<T>(proc: FleetProcess): Promise<T> {
  return (await (await fetch(`http://127.0.0.1:${healthPort(proc)}/healthz`)).json()) as T;
}

/**
 * A real fleet for end-to-end tests: a private redis-server, the venue emulations over HTTP,
 * SQLite store and sink files in a temp dir, one Redis key prefix per test, and `tickfleet`
 * worker/scheduler child processes started from the CLI.
 */
export class FleetHarness {
  readonly prefix: string;
  readonly storeUrl: string;
  readonly sinkUrl: string;
  private readonly procs: FleetProcess[] = [];

  private constructor(
    readonly redis: TestRedis,
    readonly mock: MockVenue,
    readonly dir: TempDir,
  ) {
    this.prefix = redis.namespace();
    this.storeUrl = dir.sqliteUrl('state.db');
    this.sinkUrl = dir.sqliteUrl('data.db');
  }

  /**
   * Starts a fleet; `{ cluster: true }` runs it on a three-master Redis Cluster instead of one
   * redis-server; `{ restartableRedis: { aof } }` on a private server that {@link killRedis} and
   * {@link startRedisAgain} stop and start on the same port (with or without an AOF).
   */
  static async start(scenario: unknown = {}, options: { cluster?: boolean; restartableRedis?: { aof: boolean } } = {}): Promise<FleetHarness> {
    const dir = tempDir('tickfleet-fleet-');
    const redis = options.cluster
      ? await clusterAsTestRedis()
      : options.restartableRedis
        ? await startRestartableRedis({ aof: options.restartableRedis.aof, dir: dir.file('redis') })
        : await startRedis();
    const mock = await startMockVenue({ scenario: scenario as never });
    return new FleetHarness(redis, mock, dir);
  }

  private get restartable(): RestartableRedis {
    if (!('kill' in this.redis)) throw new FixtureError('FleetHarness', 'FleetHarness: start it with { restartableRedis: { aof } } to kill and restart Redis');
    return this.redis as RestartableRedis;
  }

  /** SIGKILLs the fleet's redis-server (no shutdown save: only what the AOF already holds survives). */
  killRedis(): Promise<void> {
    return this.restartable.kill('SIGKILL');
  }

  /** Starts the killed redis-server again on the same port. */
  startRedisAgain(): Promise<void> {
    return this.restartable.start();
  }

  /** The emulation's ground-truth counters (`/_mock/stats`) of one venue, read over HTTP. */
  async mockStats(venue: string): Promise<VenueStats> {
    const res = await fetch(new URL('/_mock/stats', this.mock.url));
    const stats = (await res.json()) as { venues: Record<string, VenueStats | undefined> };
    const v = stats.venues[venue];
    if (!v) throw new FixtureError('mock venue', `/_mock/stats has no venue ${venue}`);
    return v;
  }

  /** Compares the stored candles of [fromMs, toMs) with `expectedCandles` of the emulation. */
  async candleReport(venue: string, symbol: string, timeframe: '1m' | '1h' | '1d', fromMs: number, toMs: number): Promise<CandleReport> {
    const stored = (await this.storedOpenTimes(venue, symbol, timeframe)).filter((t) => t >= fromMs && t < toMs);
    const expected = new Set(expectedCandles(venue, symbol, timeframe, fromMs, toMs, DEFAULT_SEED).map((c) => c.openTime));
    return compareCandles(stored, expected);
  }

  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      REDIS_URL: this.redis.url,
      TICKFLEET_PREFIX: this.prefix,
      TICKFLEET_STORE_URL: this.storeUrl,
      TICKFLEET_SINK_URL: this.sinkUrl,
      TICKFLEET_SPOOL_DIR: this.dir.file('spool'),
      TICKFLEET_UNIT_LOCK_MS: '5000',
      TICKFLEET_STALLED_INTERVAL_MS: '2000',
      TICKFLEET_CONNECTOR_POLL_MS: '500',
      TICKFLEET_HEARTBEAT_MS: '5000',
      TICKFLEET_GRACE_MS: '15000',
      POLYGON_API_KEY: 'test-key',
      // the Alpaca emulation takes upper-case key ids
      ALPACA_API_KEY_ID: 'PKFLEETHARNESS000001',
      ALPACA_API_SECRET_KEY: 'fleet-harness-secret',
      LOG_LEVEL: 'info',
      ...extra,
    };
  }

  cli(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
    return runCli(['--store', this.storeUrl, ...args], { env: this.env(extraEnv) });
  }

  /** Runs a CLI command that must succeed; returns its stdout. */
  async ok(...args: string[]): Promise<string> {
    const r = await this.cli(args);
    if (r.code !== 0) throw new FixtureError(`tickfleet ${args[0] ?? ''}`, `tickfleet ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  }

  /** `tickfleet connectors upsert <venue>` pointed at this fleet's emulation of the venue, plus `flags` (`--limit`, `--period`…). */
  upsertConnector(venue: MockVenueName, ...flags: string[]): Promise<string> {
    return this.ok('connectors', 'upsert', venue, '--base-url', this.mock.baseUrl(venue), ...flags);
  }

  /** `tickfleet backfill <venue> <symbol> --timeframe … --from … --to …` (ISO of the epoch ms given), plus `flags`; returns stdout. */
  backfill(venue: string, symbol: string, timeframe: string, fromMs: number, toMs: number, ...flags: string[]): Promise<string> {
    return this.ok(
      'backfill',
      venue,
      symbol,
      '--timeframe',
      timeframe,
      '--from',
      new Date(fromMs).toISOString(),
      '--to',
      new Date(toMs).toISOString(),
      ...flags,
    );
  }

  /**
   * Settles a live `1m` candle job after a fault: waits until its cursor is within 3 minutes of
   * now, scans its gaps and runs `backfill --gaps` for whatever is owed. Returns whether a gap
   * backfill was needed.
   */
  async settleLiveJob(jobId: string): Promise<boolean> {
    await waitFor(
      () => this.withStore(async (store) => ((await store.jobs.get(jobId))?.cursor ?? 0) >= alignDown(Date.now(), '1m') - 3 * 60_000),
      `${jobId} caught up`,
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await this.ok('gaps', 'scan', jobId, '--sink', this.sinkUrl);
    const gapFill = JSON.parse(await this.ok('backfill', '--gaps', jobId, '--json')) as { id: string } | null;
    if (!gapFill) return false;
    await this.backfillDone(gapFill.id, 'gap backfill done');
    return true;
  }

  /**
   * Waits until backfill `id` is done and returns it. Fails at once when it ends failed or
   * cancelled, and after `timeoutMs`, naming what it was waiting for, the backfill's counts and
   * the fleet processes' last warnings and errors (only those mentioning `venue`, when given) and
   * `detail()`, whatever else the test can tell (an emulation's counters).
   */
  async backfillDone(
    id: string,
    what = `backfill ${id} done`,
    { timeoutMs = 60_000, venue, detail }: { timeoutMs?: number; venue?: string; detail?: () => string } = {},
  ): Promise<Backfill> {
    let last = null as Backfill | null;
    const ended = await waitFor(
      () =>
        this.withStore(async (store) => {
          last = await store.backfills.get(id);
          return last && ['done', 'failed', 'cancelled'].includes(last.status) ? last : null;
        }),
      what,
      { timeoutMs, intervalMs: 500 },
    ).catch((err: unknown) => {
      throw new FixtureError('FleetHarness', `${(err as Error).message}; ${this.backfillReport(last, venue, detail)}`);
    });
    if (ended.status !== 'done')
      throw new FixtureError('FleetHarness', `${what}: the backfill ended ${ended.status}; ${this.backfillReport(ended, venue, detail)}`);
    return ended;
  }

  /** A backfill's counts and the fleet processes' last 8 warnings and errors (those mentioning `venue`, when given). */
  private backfillReport(bf: Backfill | null, venue?: string, detail?: () => string): string {
    const counts = bf ? JSON.stringify({ status: bf.status, unitsTotal: bf.unitsTotal, unitsDone: bf.unitsDone, unitsFailed: bf.unitsFailed }) : 'not found';
    const warnings = this.procs
      .flatMap((p) =>
        warningLines(p.output())
          .filter((l) => !venue || l.includes(venue))
          .map((l) => `${p.name}: ${l}`),
      )
      .slice(-8);
    return `backfill ${counts}${detail ? `; ${detail()}` : ''}; last warnings:\n${warnings.join('\n') || '(none)'}`;
  }

  /** Puts `units` on their venues' queues as the scheduler would (a unit no job plans now, for a test to run). */
  async enqueue(units: QueuedUnit[]): Promise<void> {
    const redis = createRedisConnection(this.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: this.prefix });
    try {
      await queues.enqueue(units);
    } finally {
      await queues.close();
      redis.disconnect();
    }
  }

  /** Starts a long-running role (`worker`, `scheduler`) as a child process. */
  spawn(name: string, args: string[], extraEnv: Record<string, string> = {}): FleetProcess {
    const child = spawnCli(['--store', this.storeUrl, ...args], { env: this.env(extraEnv) });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { name, child, output: () => out, exited };
    this.procs.push(proc);
    return proc;
  }

  /**
   * Starts a scheduler that reacts within seconds, for tests that kill workers or Redis and
   * check what the fleet repairs: 500 ms ticks, a 2 s leader lease (a new leader soon after the
   * old one is gone), 15 s unit leases and a repair pass every 2 s (units owed by a dead worker
   * or lost with Redis are found again quickly). `extraEnv` overrides any of them.
   */
  spawnScheduler(extraEnv: Record<string, string> = {}, name = 'scheduler'): FleetProcess {
    return this.spawn(name, ['scheduler'], {
      TICKFLEET_SCHEDULER_TICK_MS: '500',
      TICKFLEET_SCHEDULER_LEADER_TTL_MS: '2000',
      TICKFLEET_SCHEDULER_LEASE_MS: '15s',
      TICKFLEET_SCHEDULER_REPAIR_MS: '2s',
      ...extraEnv,
    });
  }

  /** Waits until a worker process logged that it is ready; fails at once if it ends first (an exit code or a signal). */
  async ready(proc: FleetProcess, what = 'worker ready'): Promise<void> {
    await waitFor(() => proc.output().includes(what) || !isRunning(proc.child), `${proc.name}: ${what}`, { timeoutMs: 30_000 });
    if (!isRunning(proc.child)) throw this.ended(proc);
  }

  async stopProcess(proc: FleetProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (isRunning(proc.child)) proc.child.kill(signal);
    return proc.exited;
  }

  /** SIGTERM, then fails with the end of the process's output unless it exited 0. */
  async stopCleanly(proc: FleetProcess): Promise<void> {
    if ((await this.stopProcess(proc)) !== 0) throw this.ended(proc, ' on SIGTERM');
  }

  /** The error for a process that ended when it should not have: its exit code or signal and the end of its output. */
  ended(proc: FleetProcess, when = ''): FixtureError {
    const how = proc.child.exitCode ?? proc.child.signalCode;
    return new FixtureError(proc.name, `${proc.name} exited ${how}${when}; its last output:\n${proc.output().split('\n').slice(-30).join('\n')}`);
  }

  async withStore<T>(fn: (store: StateStore) => Promise<T>): Promise<T> {
    const store = await openStore(this.storeUrl);
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  }

  async withSink<T>(fn: (sink: Sink) => Promise<T>): Promise<T> {
    const sink = await openSink(this.sinkUrl);
    try {
      return await fn(sink);
    } finally {
      await sink.close();
    }
  }

  /** Open times of every stored candle of (venue, symbol, timeframe), ascending. */
  async storedOpenTimes(venue: string, symbol: string, timeframe: '1m' | '1h' | '1d'): Promise<number[]> {
    return this.withSink(async (sink) => {
      const out: number[] = [];
      for await (const c of sink.reader!.streamCandles({ venue, symbol, timeframe })) out.push(c.openTime);
      return out;
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => this.stopProcess(p, 'SIGKILL')));
    await this.mock.stop();
    await this.redis.stop();
    this.dir.remove();
  }
}

async function clusterAsTestRedis(): Promise<TestRedis> {
  const cluster = await startRedisCluster();
  return { url: cluster.url, port: cluster.ports[0]!, namespace: () => `t${randomUUID().slice(0, 8)}`, stop: () => cluster.stop() };
}
