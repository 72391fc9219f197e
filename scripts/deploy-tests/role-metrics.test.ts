/**
 * The metric classes the roles construct today agree with the catalog row by row (name, type,
 * help, labels, buckets), so the catalog, docs/metrics.md, the alerts and the dashboards describe
 * what a role really exposes, also for roles not (yet) registering through `registerMetric`.
 */
import { isCatalogMetric, METRIC_CATALOG, Registry, type MetricRole } from '@tickfleet/telemetry';
import { PipelineMetrics } from '@tickfleet/sinks';
import { StreamMetrics } from '@tickfleet/streams';
import { WorkerMetrics } from '@tickfleet/worker';
import { SchedulerMetrics } from '@tickfleet/scheduler';
import { FleetStatusMetrics } from '@tickfleet/dashboard';

interface Introspected {
  name: string;
  help: string;
  labelNames?: string[];
  upperBounds?: number[];
  constructor: { name: string };
}

function describeRegistry(registry: Registry): Array<{ name: string; type: string; help: string; labels: string[]; buckets?: number[] }> {
  return registry.getMetricsAsArray().map((m) => {
    const metric = m as unknown as Introspected;
    return {
      name: metric.name,
      type: metric.constructor.name.toLowerCase(),
      help: metric.help,
      labels: [...(metric.labelNames ?? [])],
      ...(metric.upperBounds ? { buckets: [...metric.upperBounds] } : {}),
    };
  });
}

const ROLES: Array<[MetricRole, string, (r: Registry) => unknown]> = [
  ['worker', 'WorkerMetrics', (r) => new WorkerMetrics(r)],
  ['worker', 'PipelineMetrics', (r) => new PipelineMetrics(r)],
  ['worker', 'StreamMetrics', (r) => new StreamMetrics(r)],
  ['scheduler', 'SchedulerMetrics', (r) => new SchedulerMetrics(r)],
  ['dashboard', 'FleetStatusMetrics', (r) => new FleetStatusMetrics(r)],
];

describe('role metric classes against the catalog', () => {
  it.each(ROLES)('%s role: %s registers only catalog metrics, exactly as catalogued', (role, _cls, create) => {
    const registry = new Registry();
    create(registry);
    const metrics = describeRegistry(registry);
    expect(metrics.length).toBeGreaterThan(3);
    for (const m of metrics) {
      expect({ metric: m.name, inCatalog: isCatalogMetric(m.name) }).toEqual({ metric: m.name, inCatalog: true });
      if (!isCatalogMetric(m.name)) continue;
      const spec = METRIC_CATALOG[m.name];
      expect(m).toEqual({
        name: m.name,
        type: spec.type,
        help: spec.help,
        labels: [...spec.labelNames],
        ...('buckets' in spec ? { buckets: [...spec.buckets] } : {}),
      });
      expect(spec.roles as readonly string[]).toContain(role);
    }
  });

  it('leaves no catalog metric without a role class that creates it', () => {
    const created = new Set<string>();
    for (const [, , create] of ROLES) {
      const registry = new Registry();
      create(registry);
      for (const m of describeRegistry(registry)) created.add(m.name);
    }
    const missing = Object.keys(METRIC_CATALOG).filter((name) => !created.has(name));
    expect(missing).toEqual([]);
  });
});
