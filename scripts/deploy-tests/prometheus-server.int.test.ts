/**
 * The rules and dashboards against a real Prometheus (Debian's `prometheus` binary, on loopback,
 * scraping every second): it scrapes a /metrics endpoint carrying every catalog metric, loads the
 * generated rules file, evaluates them (one alert fires from scraped data, one stays silent), and
 * answers every dashboard panel query and the KEDA query without an error.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { freePort, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';
import { createRegistry, HealthServer, METRIC_CATALOG, registerMetric, registerRoleMetrics, type Registry } from '@tickfleet/telemetry';
import { RULES_FILE } from '../gen-prometheus-rules.js';
import { alertRules, promqlUses, readYaml } from './deploy-files.js';

interface PromResponse<T> {
  status: string;
  error?: string;
  data: T;
}

let prometheus: ChildProcess | undefined;
let server: HealthServer | undefined;
let dir: TempDir | undefined;
let promUrl = '';
let ticker: NodeJS.Timeout | undefined;
let promLog = '';
/** Scrapes and rule evaluations run every second; a loaded machine may take far longer to show them. */
const SCRAPE_WAIT = { timeoutMs: 50_000 };

async function api<T>(path: string): Promise<PromResponse<T>> {
  const res = await fetch(`${promUrl}${path}`);
  return (await res.json()) as PromResponse<T>;
}
async function query(expr: string): Promise<PromResponse<{ resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> }>> {
  return api(`/api/v1/query?query=${encodeURIComponent(expr)}`);
}

/** Every catalog metric with a sample for venue binance, so every panel query has data to match. */
function populate(registry: Registry): void {
  for (const name of registerRoleMetrics(registry)) {
    const spec = METRIC_CATALOG[name];
    const labels: Record<string, string> = {};
    for (const l of spec.labelNames)
      labels[l] = l === 'venue' ? 'binance' : l === 'job_id' ? 'binance:BTC/USDT:1m:ohlcv' : l === 'cause' ? '429' : l === 'status' ? '429' : 'x';
    const metric = registerMetric(registry, name) as unknown as {
      observe?: (l: object, v: number) => void;
      set?: (l: object, v: number) => void;
      inc: (l: object, v: number) => void;
    };
    if (metric.observe) metric.observe(labels, 0.2);
    else if (metric.set) metric.set(labels, 1);
    else metric.inc(labels, 1);
  }
  registerMetric(registry, 'tickfleet_venue_runnable_units').set({ venue: 'binance' }, 7);
  registerMetric(registry, 'tickfleet_scheduler_is_leader').set(1);
}

beforeAll(async () => {
  dir = tempDir('tickfleet-prom-');
  const registry = createRegistry('fleet', { defaultMetrics: false });
  populate(registry);
  const dropped = registerMetric(registry, 'tickfleet_spool_dropped_total');
  // A full spool dropping book records: the no-`for` critical alert must fire from scraped data.
  ticker = setInterval(() => dropped.inc({ venue: 'binance', channel: 'book' }, 5), 300);
  server = new HealthServer({ registry });
  const target = await server.start();
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    dir.file('prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${RULES_FILE}`,
      'scrape_configs:',
      '  - job_name: tickfleet',
      '    static_configs:',
      `      - targets: ['127.0.0.1:${target}']`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    'prometheus',
    [`--config.file=${dir.file('prometheus.yml')}`, `--storage.tsdb.path=${dir.file('data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  prometheus.stderr?.on('data', (b: Buffer) => (promLog += b.toString()));
  const started = await new Promise<boolean>((resolve) => {
    prometheus?.once('error', () => resolve(false));
    prometheus?.once('spawn', () => resolve(true));
  });
  if (!started) throw new Error("prometheus is not on PATH: install Debian's prometheus package (apt-get install -y prometheus, or bash scripts/setup.sh)");
  await waitFor(async () => (await fetch(`${promUrl}/-/ready`)).ok, `prometheus ready (${promLog})`, { timeoutMs: 90_000 });
}, 120_000);

afterAll(async () => {
  if (ticker) clearInterval(ticker);
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((r) => prometheus?.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await server?.stop();
  dir?.remove();
});

describe('real prometheus', () => {
  it('scrapes the catalog series and answers the autoscaling query', async () => {
    const res = await waitFor(
      async () => {
        const r = await query('tickfleet_venue_runnable_units{venue="binance"}');
        return r.data.result.length > 0 ? r : undefined;
      },
      'the runnable-units series',
      SCRAPE_WAIT,
    );
    expect(res.data.result[0]?.value[1]).toBe('7');
    // The ScaledObject's query, without the namespace label a ServiceMonitor would add.
    const so = readYaml('deploy/k8s/overlays/prod/worker-scaled-object.yaml') as { spec: { triggers: Array<{ type: string; metadata: { query?: string } }> } };
    const kedaQuery = so.spec.triggers.find((t) => t.type === 'prometheus')?.metadata.query?.replace(/\{namespace="[^"]+"\}/, '') ?? '';
    const scaled = await query(kedaQuery);
    expect(scaled.status).toBe('success');
    expect(scaled.data.result[0]?.value[1]).toBe('7');
  });

  it('loads every rule of the generated rules file and evaluates it without error', async () => {
    const rules = await waitFor(
      async () => {
        const r = await api<{ groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> }>('/api/v1/rules');
        const all = r.data.groups.flatMap((g) => g.rules);
        return all.length > 0 && all.every((x) => x.health === 'ok') ? all : undefined;
      },
      'every rule evaluated with health ok',
      SCRAPE_WAIT,
    );
    expect(rules.map((r) => r.name).sort()).toEqual(
      alertRules()
        .map((r) => r.alert)
        .sort(),
    );
  });

  it('fires an alert from scraped data and keeps a healthy one silent', async () => {
    const alerts = await waitFor(
      async () => {
        const r = await api<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('/api/v1/alerts');
        return r.data.alerts.some((a) => a.labels.alertname === 'TickfleetSpoolDroppingRecords' && a.state === 'firing') ? r.data.alerts : undefined;
      },
      'TickfleetSpoolDroppingRecords firing',
      SCRAPE_WAIT,
    );
    const fired = alerts.find((a) => a.labels.alertname === 'TickfleetSpoolDroppingRecords');
    expect(fired?.labels).toMatchObject({ severity: 'critical', venue: 'binance', channel: 'book' });
    // A leader is scraped (is_leader 1): the no-leader alert is neither pending nor firing.
    expect(alerts.filter((a) => a.labels.alertname === 'TickfleetSchedulerNoLeader')).toEqual([]);
  });

  it('answers every dashboard panel query without an error', async () => {
    const failures: string[] = [];
    for (const use of promqlUses().filter((u) => u.user.startsWith('panel:'))) {
      const expr = use.expr.replace(/\$venue/g, 'binance');
      const r = await query(expr);
      if (r.status !== 'success') failures.push(`${use.user}: ${r.error ?? r.status}`);
    }
    expect(failures).toEqual([]);
    // And the drill-down's budget utilization has data (used / limit of binance).
    const util = await query('max by (venue) (tickfleet_budget_used{venue="binance"}) / max by (venue) (tickfleet_budget_limit{venue="binance"})');
    expect(util.data.result[0]?.value[1]).toBe('1');
  });
});
