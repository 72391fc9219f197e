import { collectDefaultMetrics, Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Summary, Registry } from 'prom-client';

/**
 * A fresh prom-client registry for one process (or one test), with Node's default process
 * metrics under `tickfleet_` and a `role` default label.
 */
export function createRegistry(role: string, options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ role });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'tickfleet_' });
  return registry;
}
