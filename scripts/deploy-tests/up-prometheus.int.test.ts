/**
 * `tickfleet up --demo --prometheus` as a user runs it: the Prometheus it starts (Debian's binary
 * from PATH) scrapes every role of the running fleet, has the project's rules loaded and evaluating,
 * answers queries with the fleet's own series, lists the alerts in its UI, and goes away with the
 * fleet: on SIGTERM of `up`, and through the watchdog when `up` is SIGKILLed. Without the binary
 * on PATH, `up --prometheus` refuses in one line before it starts anything.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runCli, spawnCli, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';
import { RULES_FILE } from '../gen-prometheus-rules.js';
import { alertRules, promqlUses } from './deploy-files.js';

interface PromResponse<T> {
  status: string;
  data: T;
}
interface Target {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: string;
  lastError: string;
}
interface RuleGroup {
  name: string;
  rules: Array<{ name: string; type: string; health: string; lastError?: string }>;
}
interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Waits on a fleet and a Prometheus starting on a busy machine: the states are asserted, not the time. */
const FLEET_WAIT = { timeoutMs: 90_000, intervalMs: 500 };

async function api<T>(url: string, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(`${url}${path}`);
    return res.ok ? ((await res.json()) as PromResponse<T>).data : undefined;
  } catch {
    return undefined;
  }
}
const query = (url: string, expr: string): Promise<{ result: Sample[] } | undefined> => api(url, `/api/v1/query?query=${encodeURIComponent(expr)}`);

/** Pids whose command line is a prometheus started with this config file (from /proc). */
function prometheusPids(configFile: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const state = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.[0];
      if (state !== 'Z' && argv[0]?.endsWith('prometheus') && argv.includes(`--config.file=${configFile}`)) pids.push(Number(name));
    } catch {
      // exited while listing
    }
  }
  return pids;
}

/** Whether anything answers HTTP at `url`. */
const answers = (url: string): Promise<boolean> =>
  fetch(url).then(
    () => true,
    () => false,
  );

/** Starts `up` in `dir` and resolves with its banner's Prometheus URLs and the fleet's recorded metrics URLs. */
async function startUp(
  dir: TempDir,
  args: string[],
): Promise<{ up: ChildProcess; output: () => string; url: string; alertsUrl: string; metrics: Record<string, string> }> {
  const up = spawnCli(['up', ...args, '--workers', '1', '--dashboard-port', '0'], {
    cwd: dir.path,
    env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined, TICKFLEET_PREFIX: undefined, LOG_LEVEL: 'info' },
  });
  let out = '';
  up.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  up.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes('tickfleet is up') || up.exitCode !== null, 'tickfleet is up', FLEET_WAIT);
  expect(out).toContain('tickfleet is up');
  const m = /^ {2}prometheus: (http:\/\/127\.0\.0\.1:\d+) {2}\(alerts: (\S+),/m.exec(out);
  expect(m).not.toBeNull();
  const fleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as { metrics: Record<string, string> };
  return { up, output: () => out, url: m![1]!, alertsUrl: m![2]!, metrics: fleet.metrics };
}

describe('tickfleet up --prometheus', () => {
  let dir: TempDir;
  beforeEach(() => {
    dir = tempDir('tickfleet-up-prom-');
  });
  afterEach(() => dir.remove());

  it('runs a Prometheus scraping every role with the rules loaded, and stops it with the fleet', async () => {
    const { up, output, url, alertsUrl, metrics } = await startUp(dir, ['--demo', '--prometheus']);
    const exited = new Promise<number | null>((r) => up.once('exit', (code) => r(code)));
    const configFile = join(dir.path, '.tickfleet/prometheus.yml');
    try {
      expect(Object.keys(metrics).sort()).toEqual(['dashboard', 'scheduler', 'worker-0']);
      // Every role of this fleet is a target (named after its role), and every target is up.
      const targets = await waitFor(
        async () => {
          const t = (await api<{ activeTargets: Target[] }>(url, '/api/v1/targets'))?.activeTargets;
          return t && t.length === Object.keys(metrics).length && t.every((x) => x.health === 'up') ? t : undefined;
        },
        'every target of the fleet up',
        FLEET_WAIT,
      );
      expect(Object.fromEntries(targets.map((t) => [t.labels.instance, t.scrapeUrl]))).toEqual(metrics);

      // The project's rule groups and alerts, loaded from the generated rules file and evaluating.
      const groups = await waitFor(
        async () => {
          const g = (await api<{ groups: RuleGroup[] }>(url, '/api/v1/rules'))?.groups;
          return g && g.length > 0 && g.every((x) => x.rules.every((r) => r.health === 'ok')) ? g : undefined;
        },
        'every rule evaluated with health ok',
        FLEET_WAIT,
      );
      const fileGroups = (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: Array<{ name: string }> }).groups.map((g) => g.name);
      expect(groups.map((g) => g.name).sort()).toEqual([...fileGroups].sort());
      const alerts = alertRules()
        .map((r) => r.alert)
        .sort();
      expect(
        groups
          .flatMap((g) => g.rules)
          .filter((r) => r.type === 'alerting')
          .map((r) => r.name)
          .sort(),
      ).toEqual(alerts);
      // The UI's alerts page (Debian's build serves it under /classic) lists them.
      const page = await (await fetch(alertsUrl)).text();
      for (const alert of alerts) expect([alert, page.includes(alert)]).toEqual([alert, true]);

      // The fleet's own series: units the demo's worker ran, the dashboard's fleet gauges, and the
      // per-job cursor lag with its own `job` label, which the drill-down's lagging-jobs panel reads.
      const units = await waitFor(
        async () => (await query(url, 'sum by (venue) (tickfleet_units_total{instance="worker-0"})'))?.result[0],
        'units of the demo counted',
        FLEET_WAIT,
      );
      expect(Number(units.value[1])).toBeGreaterThan(0);
      const live = await waitFor(async () => (await query(url, 'tickfleet_live_workers{venue="binance"}'))?.result[0], 'live workers of binance', FLEET_WAIT);
      expect(live.metric).toMatchObject({ instance: 'dashboard', job: 'tickfleet-dashboard' });
      expect(live.value[1]).toBe('1');
      const lagging = promqlUses().find((u) => u.user.startsWith('panel:') && u.expr.includes('tickfleet_cursor_lag_seconds'));
      expect(lagging).toBeDefined();
      const lag = await waitFor(
        async () => (await query(url, lagging!.expr.replace(/\$venue/g, 'binance')))?.result.find((s) => s.metric.job_id === 'binance:BTC/USDT:1m:ohlcv'),
        'the lagging-jobs panel answering for the binance job',
        FLEET_WAIT,
      );
      expect(Number(lag.value[1])).toBeGreaterThanOrEqual(0);

      const pids = prometheusPids(configFile);
      expect(pids).toHaveLength(1);
      expect(readFileSync(join(dir.path, '.tickfleet/logs/prometheus.log'), 'utf8')).toContain('Server is ready to receive web requests.');
      expect(output()).toContain('.tickfleet/logs/{scheduler,worker-N,dashboard,prometheus}.log');
      expect(existsSync(join(dir.path, '.tickfleet/prometheus/wal'))).toBe(true);

      up.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(prometheusPids(configFile)).toEqual([]);
      expect(await answers(url)).toBe(false);
    } finally {
      if (up.exitCode === null) up.kill('SIGKILL');
      for (const pid of prometheusPids(configFile)) process.kill(pid, 'SIGKILL');
    }
  }, 240_000);

  it("takes a free port when the one asked for is taken, and is stopped by up's watchdog when up is killed with SIGKILL", async () => {
    // Another server holds the port asked for: Prometheus cannot bind it and is started again on a free one.
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const taken = (holder.address() as AddressInfo).port;
    const { up, url } = await startUp(dir, ['--prometheus', String(taken)]);
    const configFile = join(dir.path, '.tickfleet/prometheus.yml');
    try {
      expect(new URL(url).port).not.toBe(String(taken));
      await waitFor(async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok, 'prometheus ready', FLEET_WAIT);
      expect(prometheusPids(configFile)).toHaveLength(1);
      up.kill('SIGKILL');
      // The watchdog stops it after the roles have stopped on their own (they notice up is gone).
      await waitFor(() => prometheusPids(configFile).length === 0, 'no prometheus of the fleet left', { timeoutMs: 150_000, intervalMs: 500 });
      expect(await answers(url)).toBe(false);
    } finally {
      if (up.exitCode === null) up.kill('SIGKILL');
      for (const pid of prometheusPids(configFile)) process.kill(pid, 'SIGKILL');
      holder.close();
    }
  }, 300_000);

  it('refuses in one line naming the package when prometheus is not on PATH, before starting anything', async () => {
    // The CLI runs from node's path, not PATH; PATH holds no directory at all.
    const r = await runCli(['up', '--demo', '--prometheus', '--dashboard-port', '0'], { cwd: dir.path, env: { PATH: join(dir.path, 'no-such-bin') } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^tickfleet: [^\n]*--prometheus[^\n]*apt install prometheus[^\n]*\n$/);
    expect(existsSync(join(dir.path, '.tickfleet'))).toBe(false);
  });
});
