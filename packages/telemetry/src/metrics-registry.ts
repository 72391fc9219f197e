import { collectDefaultMetrics, Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Summary, Registry } from 'prom-client';

/**
 * A fresh prom-client registry for one process (or one test), with Node's default process
 * metrics under `tickfleet_` and a `role` default label.
 */
export function createRegistry(role: string, options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ role });
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: 'tickfleet_' });
    // prom-client's `nodejs_active_{handles,requests,resources}_total` are gauges named like
    // counters, which `promtool check metrics` rejects; the un-suffixed twins carry the same value.
    for (const metric of registry.getMetricsAsArray()) {
      const { name, type } = metric as unknown as { name: string; type: string };
      if (type === 'gauge' && name.endsWith('_total')) registry.removeSingleMetric(name);
    }
  }
  return registry;
}
