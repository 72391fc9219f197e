import { ValidationError } from '@tickfleet/core';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { catalogEntries, isCatalogMetric, METRIC_CATALOG, registerMetric, registerRoleMetrics } from './metrics-catalog.js';

describe('metric catalog', () => {
  it('creates every metric with the type, labels and buckets of its row', async () => {
    const registry = new Registry();
    for (const entry of catalogEntries()) {
      const metric = registerMetric(registry, entry.name);
      const expected = entry.type === 'counter' ? Counter : entry.type === 'gauge' ? Gauge : Histogram;
      expect(metric).toBeInstanceOf(expected);
    }
    const json = await registry.getMetricsAsJSON();
    expect(json.map((m) => m.name).sort()).toEqual(Object.keys(METRIC_CATALOG).sort());
    for (const m of json) {
      const spec = METRIC_CATALOG[m.name as keyof typeof METRIC_CATALOG];
      expect(m.help).toBe(spec.help);
      expect(m.type).toBe(spec.type);
    }
    // Buckets reach the exposition: the histogram's le series are exactly the catalog's.
    const hist = registerMetric(registry, 'tickfleet_request_duration_seconds');
    hist.observe({ venue: 'binance', endpoint: 'klines' }, 0.2);
    const text = await registry.getSingleMetricAsString('tickfleet_request_duration_seconds');
    const les = [...text.matchAll(/le="([^"]+)"/g)].map((x) => x[1]);
    expect(les).toEqual([...METRIC_CATALOG.tickfleet_request_duration_seconds.buckets.map(String), '+Inf']);
  });

  it('follows the naming rules: prefix, units in names, _total counters', () => {
    for (const e of catalogEntries()) {
      expect(e.name).toMatch(/^tickfleet_[a-z0-9_]+$/);
      if (e.type === 'counter') expect(e.name).toMatch(/_total$/);
      else expect(e.name).not.toMatch(/_total$/);
      if (e.type === 'histogram') {
        expect(e.name).toMatch(/_seconds$/);
        expect(e.buckets?.length).toBeGreaterThan(3);
        expect([...(e.buckets ?? [])]).toEqual([...(e.buckets ?? [])].sort((a, b) => a - b));
      } else {
        expect(e.buckets).toBeUndefined();
      }
      expect(e.roles.length).toBeGreaterThan(0);
      expect(e.help.length).toBeGreaterThan(10);
    }
  });

  it('keeps cardinality bounded: no symbol label anywhere, a job_id label only on the documented per-job gauge', () => {
    const perJob = catalogEntries().filter((e) => e.labelNames.includes('job_id'));
    expect(perJob.map((e) => e.name)).toEqual(['tickfleet_cursor_lag_seconds']);
    expect(perJob[0]?.cardinality).toMatch(/per-job/);
    // stream: a stream definition's name, bounded by the streams an operator defines (each row says so).
    const allowed = new Set(['venue', 'kind', 'outcome', 'endpoint', 'status', 'channel', 'adapter', 'state', 'cause', 'job_id', 'stream']);
    for (const e of catalogEntries()) {
      for (const label of e.labelNames) expect({ metric: e.name, label, allowed: allowed.has(label) }).toEqual({ metric: e.name, label, allowed: true });
    }
  });

  it('returns the registered metric on a second registration and rejects a clashing type', () => {
    const registry = new Registry();
    const first = registerMetric(registry, 'tickfleet_units_total');
    first.inc({ venue: 'binance', kind: 'candles', outcome: 'ok' });
    expect(registerMetric(registry, 'tickfleet_units_total')).toBe(first);

    const clash = new Registry();
    new Gauge({ name: 'tickfleet_records_total', help: 'not a counter', registers: [clash] });
    expect(() => registerMetric(clash, 'tickfleet_records_total')).toThrow(ValidationError);
  });

  it('registers exactly the metrics of one role', async () => {
    const registry = new Registry();
    const names = registerRoleMetrics(registry, 'scheduler');
    expect(names).toContain('tickfleet_scheduler_is_leader');
    expect(names).not.toContain('tickfleet_units_total');
    expect((await registry.getMetricsAsJSON()).map((m) => m.name).sort()).toEqual([...names].sort());
    expect(isCatalogMetric('tickfleet_venue_runnable_units')).toBe(true);
    expect(isCatalogMetric('tickfleet_nope')).toBe(false);
  });
});
