/**
 * The Prometheus side of the deploy surface, checked with the real tool that consumes it:
 * promtool (Debian's `prometheus` package; scripts/setup.sh installs it). Without promtool these
 * tests fail with an install hint rather than skip, so CI cannot pass without running them.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createRegistry, HealthServer, METRIC_CATALOG, registerMetric, registerRoleMetrics, type MetricRole } from '@tickfleet/telemetry';
import { generatedFiles, PROMETHEUS_RULE_MANIFEST, RULES_FILE } from '../gen-prometheus-rules.js';
import { alertRules, ROOT } from './deploy-files.js';

const TESTS_DIR = join(ROOT, 'deploy/prometheus/tests');

function promtool(args: string[], input?: string): { status: number | null; out: string } {
  const res = spawnSync('promtool', args, { cwd: ROOT, encoding: 'utf8', ...(input === undefined ? {} : { input }) });
  if (res.error && (res.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error("promtool is not on PATH: install Debian's prometheus package (apt-get install -y prometheus, or bash scripts/setup.sh)");
  }
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

interface PromtoolTestFile {
  rule_files: string[];
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
}

describe('prometheus rules', () => {
  it('are generated from the source: the rules file and the PrometheusRule manifest are in sync', () => {
    for (const [path, content] of Object.entries(generatedFiles())) {
      expect({ path, upToDate: readFileSync(path, 'utf8') === content }).toEqual({ path, upToDate: true });
    }
    const rulesFile = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: unknown };
    const manifest = parse(readFileSync(PROMETHEUS_RULE_MANIFEST, 'utf8')) as { kind: string; spec: { groups: unknown } };
    expect(manifest.kind).toBe('PrometheusRule');
    expect(manifest.spec.groups).toEqual(rulesFile.groups);
  });

  it('pass promtool check rules', () => {
    const res = promtool(['check', 'rules', RULES_FILE]);
    expect(res.out).toContain(`SUCCESS: ${alertRules().length} rules found`);
    expect(res.status).toBe(0);
  });

  it('cover the alerts the operations issue asks for, each with severity, summary, description and a one-line runbook', () => {
    const names = alertRules().map((r) => r.alert);
    for (const required of [
      'TickfleetVenueBanned',
      'TickfleetVenueFrozen',
      'TickfleetVenueFailing',
      'TickfleetBudgetExhausted',
      'TickfleetStaleData',
      'TickfleetRunnableBacklogGrowing',
      'TickfleetUnitFailureRatioHigh',
      'TickfleetSinkUnavailable',
      'TickfleetSpoolGrowing',
      'TickfleetNoLiveWorkers',
      'TickfleetSchedulerNoLeader',
      'TickfleetGapsNotShrinking',
    ]) {
      expect(names).toContain(required);
    }
    for (const r of alertRules()) {
      expect(['critical', 'warning']).toContain(r.labels.severity);
      expect(r.annotations.summary).toBeTruthy();
      expect(r.annotations.description).toBeTruthy();
      expect(r.annotations.runbook).toMatch(/^[^\n]{20,}$/);
    }
  });

  it('have promtool unit tests in which every alert both fires and stays silent', () => {
    const files = readdirSync(TESTS_DIR).filter((f) => f.endsWith('.test.yml'));
    expect(files.length).toBeGreaterThan(0);
    const firing = new Set<string>();
    const silent = new Set<string>();
    for (const f of files) {
      const doc = parse(readFileSync(join(TESTS_DIR, f), 'utf8')) as PromtoolTestFile;
      expect(doc.rule_files).toEqual(['../rules/tickfleet.rules.yml']);
      for (const t of doc.tests) {
        for (const a of t.alert_rule_test ?? []) (a.exp_alerts?.length ? firing : silent).add(a.alertname);
      }
    }
    for (const { alert } of alertRules()) {
      expect({ alert, firing: firing.has(alert), silent: silent.has(alert) }).toEqual({ alert, firing: true, silent: true });
    }
  });

  it('pass promtool test rules', () => {
    const files = readdirSync(TESTS_DIR)
      .filter((f) => f.endsWith('.test.yml'))
      .map((f) => join(TESTS_DIR, f));
    const res = promtool(['test', 'rules', ...files]);
    expect(res.out).not.toContain('FAILED');
    expect(res.out.match(/SUCCESS/g)?.length).toBe(files.length);
    expect(res.status).toBe(0);
  });
});

describe('metric exposition from the catalog', () => {
  /** A sample in every series so counters, gauges and histograms all render values and buckets. */
  function observeAll(registry: ReturnType<typeof createRegistry>, role?: MetricRole): void {
    for (const name of registerRoleMetrics(registry, role)) {
      const spec = METRIC_CATALOG[name];
      const labels = Object.fromEntries(spec.labelNames.map((l) => [l, l === 'job_id' ? 'binance:BTC/USDT:1m:ohlcv' : 'x']));
      const metric = registerMetric(registry, name);
      if ('observe' in metric) (metric as { observe(l: object, v: number): void }).observe(labels, 0.3);
      else if ('set' in metric) (metric as { set(l: object, v: number): void }).set(labels, 2);
      else (metric as { inc(l: object, v: number): void }).inc(labels, 1);
    }
  }

  it('passes promtool check metrics for all catalog metrics in one registry', async () => {
    const registry = createRegistry('all', { defaultMetrics: false });
    observeAll(registry);
    const text = await registry.metrics();
    expect(text).toMatch(/^tickfleet_request_duration_seconds_bucket\{le="0\.5",[^}]*endpoint="x"[^}]*\} 1$/m);
    const res = promtool(['check', 'metrics'], text);
    expect(res.out.trim()).toBe('');
    expect(res.status).toBe(0);
  });

  it.each(['worker', 'scheduler', 'dashboard'] as const)(
    "passes promtool check metrics on the %s role's /metrics served over HTTP, Node process metrics included",
    async (role) => {
      // The registry a role creates: the role label and prom-client's process metrics, plus its catalog rows.
      const registry = createRegistry(role);
      observeAll(registry, role);
      const server = new HealthServer({ registry });
      const port = await server.start();
      try {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`);
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toContain(`role="${role}"`);
        expect(text).toContain('tickfleet_process_cpu_user_seconds_total');
        const check = promtool(['check', 'metrics'], text);
        expect(check.out.trim()).toBe('');
        expect(check.status).toBe(0);
      } finally {
        await server.stop();
      }
    },
  );

  it('is rejected by promtool when a metric breaks the naming rules (the check is not vacuous)', () => {
    const res = promtool(
      ['check', 'metrics'],
      '# HELP tickfleet_bad_total a gauge named like a counter\n# TYPE tickfleet_bad_total gauge\ntickfleet_bad_total 1\n',
    );
    expect(res.status).not.toBe(0);
    expect(res.out).toContain('tickfleet_bad_total');
  });
});
