/**
 * A fleet of real hosts on one machine: Redis, the store (the MongoDB wire server, which also
 * holds the sink), the venue emulations, the scheduler and worker hosts, each in its own network
 * namespace on a bridge ({@link HostNetwork}). Clients on the scheduler and worker hosts reach
 * Redis and the store through a delaying proxy running on their own host (scripts/hosts/
 * delay-proxy.ts), so a link cut or a route partition of that host cuts those links too. A
 * worker host's processes can run with a clock offset (libfaketime).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SEED, expectedCandles, type Scenario, type VenueStats } from '@tickfleet/mock-venue';
import { openStore, type StateStore } from '@tickfleet/store';
import { cliPath, compareCandles, isRunning, repoRoot, waitFor, type CandleReport } from '@tickfleet/testkit';
import { DELAY_PROXY_DEFAULTS } from './delay-proxy.js';
import { HostNetwork, type NetHost } from './netns.js';
import { retried, storedOpenTimes } from './store-reads.js';

export const HOSTS_DEFAULTS = {
  workerHosts: 3,
  /** One-way delay of the proxied Redis and store links (a 10 ms round trip). */
  linkDelayMs: DELAY_PROXY_DEFAULTS.delayMs,
  redisPort: 6379,
  storePort: 27017,
  venuePort: 8080,
  /** Where a host's proxy listens for its Redis and store links (127.0.0.1 of that host). */
  proxiedRedisPort: 16379,
  proxiedStorePort: 17017,
  /** Worker i's health and metrics port, on its host's address. */
  healthPortBase: 9100,
  /** libfaketime's preload (Debian's libfaketime package). */
  libfaketime: '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
} as const;

export interface HostProcess {
  name: string;
  host: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** Health/metrics port on the host's address (workers). */
  healthPort?: number;
}

export interface TopologyOptions {
  workerHosts?: number;
  linkDelayMs?: number;
  /** The emulations' scenario (limits, per-venue latency). */
  scenario?: Scenario;
}

export class HostTopology {
  readonly procs: HostProcess[] = [];
  private workerCount = 0;
  private readStore: Promise<StateStore> | undefined;
  /** Database of the state store; the sink's is `<db>data`. */
  readonly db: string;

  private constructor(
    readonly net: HostNetwork,
    readonly dir: string,
    readonly workerHosts: string[],
  ) {
    this.db = `tf${net.runId}`;
  }

  /** Creates the hosts and starts Redis, the store, the emulations and every host's proxy. */
  static async start(options: TopologyOptions = {}): Promise<HostTopology> {
    if (!existsSync(HOSTS_DEFAULTS.libfaketime)) throw new Error(`libfaketime not found at ${HOSTS_DEFAULTS.libfaketime} (apt-get install libfaketime)`);
    const net = HostNetwork.create();
    const dir = mkdtempSync(join(tmpdir(), `tickfleet-hosts-${net.runId}-`));
    const workerHosts = Array.from({ length: options.workerHosts ?? HOSTS_DEFAULTS.workerHosts }, (_, i) => `w${i + 1}`);
    const t = new HostTopology(net, dir, workerHosts);
    try {
      for (const name of ['redis', 'store', 'venue', 'sched', ...workerHosts]) net.addHost(name);
      writeFileSync(join(dir, 'scenario.json'), JSON.stringify(options.scenario ?? {}));
      const delay = options.linkDelayMs ?? HOSTS_DEFAULTS.linkDelayMs;
      const starts: Array<Promise<unknown>> = [
        t.startRedis(),
        t.spawnReady(
          'store',
          'mongo-wire',
          [
            process.execPath,
            '--import',
            'tsx',
            join(repoRoot(), 'packages/mongo-wire/src/bin.ts'),
            '--port',
            String(HOSTS_DEFAULTS.storePort),
            '--host',
            '0.0.0.0',
          ],
          /mongodb:\/\//,
        ),
        t.spawnReady(
          'venue',
          'mock-venue',
          [
            process.execPath,
            cliPath(),
            'mock-venue',
            '--port',
            String(HOSTS_DEFAULTS.venuePort),
            '--host',
            '0.0.0.0',
            '--scenario',
            join(dir, 'scenario.json'),
          ],
          /"venues"/,
        ),
      ];
      for (const host of ['sched', ...workerHosts]) starts.push(t.startProxy(host, delay));
      await Promise.all(starts);
      return t;
    } catch (err) {
      await t.stop();
      throw err;
    }
  }

  host(name: string): NetHost {
    return this.net.host(name);
  }

  /** `redis-server` on the Redis host, without persistence: started again after {@link killHost}, it is empty. */
  startRedis(): Promise<HostProcess> {
    return this.spawnReady(
      'redis',
      'redis',
      ['redis-server', '--port', String(HOSTS_DEFAULTS.redisPort), '--bind', '0.0.0.0', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
      /Ready to accept connections/,
    );
  }

  /** Redis and the store as the test (root namespace) reaches them, without the proxies' delay. */
  get redisUrl(): string {
    return `redis://${this.host('redis').ip}:${HOSTS_DEFAULTS.redisPort}`;
  }
  get storeUrl(): string {
    return `mongodb://${this.host('store').ip}:${HOSTS_DEFAULTS.storePort}/${this.db}`;
  }
  get sinkUrl(): string {
    return `mongodb://${this.host('store').ip}:${HOSTS_DEFAULTS.storePort}/${this.db}data`;
  }
  get venueUrl(): string {
    return `http://${this.host('venue').ip}:${HOSTS_DEFAULTS.venuePort}`;
  }

  /** Environment of a tickfleet role on a scheduler or worker host: Redis and the store through that host's proxy. */
  roleEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      REDIS_URL: `redis://127.0.0.1:${HOSTS_DEFAULTS.proxiedRedisPort}`,
      TICKFLEET_PREFIX: this.db,
      TICKFLEET_STORE_URL: `mongodb://127.0.0.1:${HOSTS_DEFAULTS.proxiedStorePort}/${this.db}`,
      TICKFLEET_SINK_URL: `mongodb://127.0.0.1:${HOSTS_DEFAULTS.proxiedStorePort}/${this.db}data`,
      TICKFLEET_UNIT_LOCK_MS: '5000',
      TICKFLEET_STALLED_INTERVAL_MS: '2000',
      TICKFLEET_CONNECTOR_POLL_MS: '500',
      TICKFLEET_HEARTBEAT_MS: '5000',
      TICKFLEET_GRACE_MS: '15000',
      LOG_LEVEL: 'info',
      ...extra,
    };
  }

  /** Runs `argv` in a host's namespace (`ip netns exec`), capturing its output. */
  spawnIn(host: string, name: string, argv: string[], env: Record<string, string> = {}): HostProcess {
    const child = spawn('ip', ['netns', 'exec', this.host(host).ns, ...argv], {
      cwd: repoRoot(),
      env: { ...process.env, NODE_OPTIONS: '', TICKFLEET_CLI_BUNDLE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const keep = (d: Buffer): void => {
      out += d.toString();
      // Long runs: keep the last 4 MB of a chatty worker's lines.
      if (out.length > 8_000_000) out = out.slice(-4_000_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc: HostProcess = { name, host, child, output: () => out, exited };
    this.procs.push(proc);
    return proc;
  }

  /** Starts a process and waits for its ready line; several node processes starting at once on a loaded machine take minutes. */
  private async spawnReady(host: string, name: string, argv: string[], ready: RegExp, env: Record<string, string> = {}): Promise<HostProcess> {
    const p = this.spawnIn(host, name, argv, env);
    await waitFor(() => ready.test(p.output()) || !isRunning(p.child), `${name} on ${host} ready`, { timeoutMs: 180_000, intervalMs: 100 });
    if (!isRunning(p.child)) throw new Error(`${name} on ${host} exited ${p.child.exitCode}:\n${p.output().slice(-3000)}`);
    return p;
  }

  /** The host's delaying proxy to Redis and the store (also after a host was killed). */
  startProxy(host: string, delayMs: number = HOSTS_DEFAULTS.linkDelayMs): Promise<HostProcess> {
    const routes = [
      `127.0.0.1:${HOSTS_DEFAULTS.proxiedRedisPort}=${this.host('redis').ip}:${HOSTS_DEFAULTS.redisPort}`,
      `127.0.0.1:${HOSTS_DEFAULTS.proxiedStorePort}=${this.host('store').ip}:${HOSTS_DEFAULTS.storePort}`,
    ];
    const argv = [process.execPath, '--import', 'tsx', join(repoRoot(), 'scripts/hosts/delay-proxy.ts'), '--delay-ms', String(delayMs), ...routes];
    return this.spawnReady(host, `proxy@${host}`, argv, /delay-proxy listening/);
  }

  /** `tickfleet scheduler` on the scheduler host, reacting within seconds (as FleetHarness.spawnScheduler). */
  startScheduler(extra: Record<string, string> = {}): Promise<HostProcess> {
    const env = this.roleEnv({
      TICKFLEET_SCHEDULER_TICK_MS: '500',
      TICKFLEET_SCHEDULER_LEADER_TTL_MS: '2000',
      TICKFLEET_SCHEDULER_LEASE_MS: '15s',
      TICKFLEET_SCHEDULER_REPAIR_MS: '2s',
      ...extra,
    });
    return this.spawnReady('sched', 'scheduler', [process.execPath, cliPath(), 'scheduler'], /scheduler started/, env);
  }

  /**
   * `tickfleet worker` on a worker host, its metrics on the host's address; `clockOffset` (a
   * libfaketime offset such as `+30s`) runs it on a skewed wall clock (timers stay real).
   */
  async startWorker(host: string, options: { clockOffset?: string; env?: Record<string, string> } = {}): Promise<HostProcess> {
    const index = this.workerCount++;
    const healthPort = HOSTS_DEFAULTS.healthPortBase + index;
    const env = this.roleEnv({
      TICKFLEET_HEALTH_HOST: '0.0.0.0',
      TICKFLEET_HEALTH_PORT: String(healthPort),
      TICKFLEET_SPOOL_DIR: join(this.dir, `spool-${host}-${index}`),
      ...(options.clockOffset
        ? { LD_PRELOAD: HOSTS_DEFAULTS.libfaketime, FAKETIME: options.clockOffset, FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_DONT_RESET: '1' }
        : {}),
      ...options.env,
    });
    const p = await this.spawnReady(
      host,
      `worker-${index}@${host}${options.clockOffset ? `(${options.clockOffset})` : ''}`,
      [process.execPath, cliPath(), 'worker'],
      /worker ready/,
      env,
    );
    p.healthPort = healthPort;
    return p;
  }

  /** Running workers (optionally of one host). */
  workers(host?: string): HostProcess[] {
    return this.procs.filter((p) => p.healthPort !== undefined && isRunning(p.child) && (!host || p.host === host));
  }

  async stopProcess(p: HostProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (isRunning(p.child)) p.child.kill(signal);
    return p.exited;
  }

  /** A whole host lost at once: SIGKILL to every process in its namespace (its proxy too). */
  async killHost(host: string): Promise<void> {
    for (const pid of this.net.pids(host)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.all(this.procs.filter((p) => p.host === host).map((p) => p.exited));
  }

  /** Runs a tickfleet command from the test's own namespace against the store and Redis directly. */
  async cli(args: string[]): Promise<string> {
    const child = spawn(process.execPath, [cliPath(), '--store', this.storeUrl, ...args], {
      cwd: repoRoot(),
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        TICKFLEET_CLI_BUNDLE: '1',
        LOG_LEVEL: 'warn',
        REDIS_URL: this.redisUrl,
        TICKFLEET_PREFIX: this.db,
        TICKFLEET_SINK_URL: this.sinkUrl,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code !== 0) throw new Error(`tickfleet ${args.join(' ')} exited ${code}: ${err}`);
    return out;
  }

  /**
   * `fn` on the test's store connection (one for every read: opening one makes its indexes, which
   * a loaded wire server answers slowly); retried (it only reads, or upserts) on a fresh connection
   * when the wire server times one out.
   */
  withStore<T>(fn: (store: StateStore) => Promise<T>): Promise<T> {
    return retried(async () => {
      const open = (this.readStore ??= openStore(this.storeUrl));
      try {
        return await fn(await open);
      } catch (err) {
        if (this.readStore === open) this.readStore = undefined;
        void open.then((s) => s.close()).catch(() => undefined);
        throw err;
      }
    });
  }

  /** The emulation's ground truth for one venue (`/_mock/stats`). */
  async venueStats(venue: string): Promise<VenueStats> {
    const res = await fetch(`${this.venueUrl}/_mock/stats`);
    const stats = (await res.json()) as { venues: Record<string, VenueStats> };
    return stats.venues[venue]!;
  }

  /** Sum of one metric's samples on a worker's /metrics whose labels contain `labels`; null when the worker does not answer. */
  async metric(p: HostProcess, name: string, labels: Record<string, string> = {}): Promise<number | null> {
    try {
      const res = await fetch(`http://${this.host(p.host).ip}:${p.healthPort}/metrics`, { signal: AbortSignal.timeout(1500) });
      const text = await res.text();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
        if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return sum;
    } catch {
      return null;
    }
  }

  /** Stored open times of (venue, symbol, timeframe) in [fromMs, toMs) against the emulation's: missing, duplicated, unexpected. */
  async candleReport(venue: string, symbol: string, fromMs: number, toMs: number): Promise<CandleReport> {
    const stored = await storedOpenTimes(this.sinkUrl, { venue, symbol, fromMs, toMs });
    const expected = new Set(expectedCandles(venue, symbol, '1m', fromMs, toMs, DEFAULT_SEED).map((c) => c.openTime));
    return compareCandles(stored, expected);
  }

  /** Kills every process it started, deletes the namespaces, the bridge and the temp dir. */
  async stop(): Promise<void> {
    await this.readStore?.then((s) => s.close()).catch(() => undefined);
    this.readStore = undefined;
    for (const p of this.procs) if (isRunning(p.child)) p.child.kill('SIGKILL');
    for (const h of this.net.hosts.keys()) {
      try {
        for (const pid of this.net.pids(h)) process.kill(pid, 'SIGKILL');
      } catch {
        // the namespace is gone
      }
    }
    await Promise.all(this.procs.map((p) => p.exited));
    this.net.remove();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
