import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, freePort, repoRoot, runCli, spawnCli, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';

const RULES = join(repoRoot(), 'deploy/prometheus/rules/tickfleet.rules.yml');

interface FleetFile {
  dashboardUrl: string;
  metrics: Record<string, string>;
}

type QueryResult = { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };

/**
 * The operations surface against a running demo fleet (`tickfleet up --demo`): a real Prometheus
 * (Debian's package) scrapes every role and loads the alert rules, and headless Chromium looks at
 * the dashboard the way an operator would.
 */
/** Every venue `up --demo` seeds. */
const DEMO_VENUES = ['alpaca', 'binance', 'coinbase', 'finnhub', 'fred', 'kraken', 'limitless', 'polygon', 'polymarket', 'xetra'];

describe('operations surface on a running demo fleet', () => {
  let dir: TempDir;
  let up: ChildProcess;
  let prometheus: ChildProcess | undefined;
  let fleet: FleetFile;
  let out = '';

  beforeAll(async () => {
    const needed: Array<[string, string]> = [
      ['prometheus', 'prometheus'],
      [CHROMIUM, 'chromium'],
    ];
    for (const [bin, pkg] of needed) {
      const found = bin.startsWith('/') ? existsSync(bin) : (process.env.PATH ?? '').split(':').some((p) => existsSync(join(p, bin)));
      if (!found) throw new Error(`${bin} not found: install Debian's ${pkg} package (bash scripts/setup.sh does)`);
    }
    dir = tempDir('tickfleet-demo-ops-');
    up = spawnCli(['up', '--demo', '--workers', '2', '--dashboard-port', '0'], {
      cwd: dir.path,
      env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined },
    });
    up.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    up.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => out.includes('tickfleet is up') || up.exitCode !== null, 'tickfleet is up', { timeoutMs: 60_000 });
    if (up.exitCode !== null) throw new Error(`tickfleet up exited: ${out}`);
    fleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as FleetFile;
  }, 90_000);

  /** What `tickfleet up` and its roles said, for a failure message (the temp dir is gone after the suite). */
  const fleetDiagnostics = (): string => {
    const logs = join(dir.path, '.tickfleet/logs');
    const tails = existsSync(logs) ? readdirSync(logs).map((f) => `--- ${f}:\n${readFileSync(join(logs, f), 'utf8').split('\n').slice(-15).join('\n')}`) : [];
    return [`tickfleet up (exit ${String(up.exitCode)}):`, out.slice(-3000), ...tails].join('\n');
  };

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const gone = new Promise((r) => prometheus?.once('exit', r));
      prometheus.kill('SIGTERM');
      await gone;
    }
    if (up && up.exitCode === null) {
      const gone = new Promise((r) => up.once('exit', r));
      up.kill('SIGINT');
      await gone;
    }
    dir?.remove();
  }, 60_000);

  it('prometheus scrapes every role, finds the key series and evaluates the alert rules', async () => {
    const port = await freePort();
    const promUrl = `http://127.0.0.1:${port}`;
    const targets = Object.entries(fleet.metrics).map(([role, url]) => {
      const u = new URL(url);
      return `  - job_name: ${role}\n    metrics_path: ${u.pathname}\n    static_configs:\n      - targets: ['${u.host}']`;
    });
    writeFileSync(
      dir.file('prometheus.yml'),
      ['global:', '  scrape_interval: 1s', '  evaluation_interval: 1s', 'rule_files:', `  - ${RULES}`, 'scrape_configs:', ...targets, ''].join('\n'),
    );
    let log = '';
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${dir.file('prometheus.yml')}`,
        `--storage.tsdb.path=${dir.file('prom-data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    prometheus.stderr?.on('data', (b: Buffer) => (log += b.toString()));
    await waitFor(async () => (await fetch(`${promUrl}/-/ready`)).ok, `prometheus ready (${log})`);
    const query = async (expr: string): Promise<QueryResult> =>
      (await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as QueryResult;

    // Every role is scraped and up.
    const roles = Object.keys(fleet.metrics).sort();
    expect(roles).toEqual(['dashboard', 'scheduler', 'worker-0', 'worker-1']);
    await waitFor(async () => (await query('up == 1')).data.result.length === roles.length, `all ${roles.length} targets up`, { timeoutMs: 30_000 }).catch(
      (err: Error) => {
        throw new Error(`${err.message}\nprometheus: ${log}\n${fleetDiagnostics()}`);
      },
    );

    // Key series from each role, with values that make sense for the demo.
    const series = async (expr: string): Promise<QueryResult['data']['result']> =>
      waitFor(
        async () => {
          const r = await query(expr);
          return r.data.result.length > 0 ? r.data.result : undefined;
        },
        expr,
        { timeoutMs: 30_000 },
      );
    expect(Number((await series('sum(tickfleet_scheduler_is_leader)'))[0]!.value[1])).toBe(1);
    expect(Number((await series('sum(tickfleet_units_total{venue="binance",outcome="ok"})'))[0]!.value[1])).toBeGreaterThan(0);
    expect(Number((await series('max(tickfleet_budget_limit{venue="binance"})'))[0]!.value[1])).toBe(5700);
    expect(Number((await series('sum(tickfleet_sink_inserted_total)'))[0]!.value[1])).toBeGreaterThan(0);
    expect((await series('tickfleet_venue_runnable_units')).map((r) => r.metric.venue).sort()).toEqual(DEMO_VENUES);
    expect(await series('histogram_quantile(0.95, sum by (le, venue) (rate(tickfleet_request_duration_seconds_bucket[1m])))')).not.toHaveLength(0);

    // The rules load and evaluate; the no-leader expression finds a leader (empty result).
    const rules = await waitFor(
      async () => {
        const r = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
          data: { groups: Array<{ rules: Array<{ name: string; health: string; lastEvaluation: string }> }> };
        };
        const all = r.data.groups.flatMap((g) => g.rules);
        return all.length > 0 && all.every((x) => !x.lastEvaluation.startsWith('0001')) ? all : undefined;
      },
      'rules evaluated',
      { timeoutMs: 30_000 },
    );
    expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
    expect((await query('(sum(tickfleet_scheduler_is_leader) or vector(0)) < 1')).data.result).toEqual([]);
  }, 120_000);

  it('shows the demo fleet in the dashboard to a person in a real browser', async () => {
    const profile = tempDir('tickfleet-chromium-');
    const context = await chromium.launchPersistentContext(profile.path, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS],
      viewport: { width: 1440, height: 700 },
    });
    try {
      const page = await context.newPage();
      await page.goto(`${fleet.dashboardUrl}/`).catch((err: Error) => {
        throw new Error(`${err.message}\n${fleetDiagnostics()}`);
      });
      await page.locator('tr[data-venue="binance"]').waitFor();
      expect(await page.locator('#venues tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-venue')))).toEqual(DEMO_VENUES);
      const cell = (venue: string, field: string) => page.locator(`tr[data-venue="${venue}"] [data-field="${field}"]`);
      expect(await cell('binance', 'status').textContent()).toBe('active');
      expect(await cell('binance', 'budget-limit').textContent()).toBe('5700');
      expect(await cell('polygon', 'budget-limit').textContent()).toBe('4');
      // The live refresh shows Binance spending its budget as the demo collects.
      await waitFor(async () => Number(await cell('binance', 'budget-used').textContent()) > 0, 'binance budget in use', { timeoutMs: 30_000 });
      const artifacts = join(repoRoot(), '.test-artifacts');
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: join(artifacts, 'demo-fleet-overview.png'), fullPage: true });

      await cell('binance', 'venue').click();
      await page.waitForURL(/\/queues\/queue\/%7Bbinance%7D/);
      await page.getByText('binance').first().waitFor({ timeout: 15_000 });
      await page.screenshot({ path: join(artifacts, 'demo-fleet-queue.png') });
    } finally {
      await context.close();
      profile.remove();
    }

    // The CLI sees the same fleet.
    const status = await runCli(['status', '--json'], { cwd: dir.path, env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined } });
    expect(status.code).toBe(0);
  }, 120_000);
});
