import { catalogEntries, isCatalogMetric, METRIC_CATALOG } from '@tickfleet/telemetry';
import { baseMetricName, dashboards, parsePromql, promqlUses } from './deploy-files.js';

const isHistogram = (name: string): boolean => isCatalogMetric(name) && METRIC_CATALOG[name].type === 'histogram';

describe('metric names in rules and dashboards', () => {
  const uses = promqlUses();

  it('finds the expressions of both dashboards and every alert', () => {
    expect(dashboards().map((d) => d.file)).toEqual(['fleet-overview.json', 'venue-drilldown.json']);
    expect(uses.filter((u) => u.user.startsWith('alert:')).length).toBeGreaterThanOrEqual(9);
    expect(uses.filter((u) => u.user.startsWith('panel:tickfleet-venue-drilldown/')).length).toBeGreaterThan(15);
  });

  it('parses every PromQL expression without a syntax error', () => {
    const broken = uses.filter((u) => parsePromql(u.expr).errors.length > 0).map((u) => `${u.user}: ${u.expr}`);
    expect(broken).toEqual([]);
    // The parser does catch errors: a guard against a grammar that accepts anything.
    expect(parsePromql('sum(rate(tickfleet_units_total[5m])').errors.length).toBeGreaterThan(0);
  });

  it('uses only metric names from the catalog (histogram _bucket/_sum/_count included)', () => {
    const unknown: string[] = [];
    for (const u of uses) {
      const names = parsePromql(u.expr).metrics;
      expect({ user: u.user, selectsSomething: names.length > 0 }).toEqual({ user: u.user, selectsSomething: true });
      for (const name of names) {
        const base = baseMetricName(name, isHistogram);
        if (!isCatalogMetric(base)) unknown.push(`${u.user}: ${name}`);
        // A histogram is read through its series, never by its bare name.
        if (isHistogram(name)) unknown.push(`${u.user}: bare histogram ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("matches each catalog row's usedBy with the alerts and panels that really read it", () => {
    const actual = new Map<string, Set<string>>();
    for (const u of uses) {
      if (u.user.startsWith('variable:')) continue;
      for (const name of parsePromql(u.expr).metrics) {
        const base = baseMetricName(name, isHistogram);
        actual.set(base, (actual.get(base) ?? new Set()).add(u.user));
      }
    }
    for (const e of catalogEntries()) {
      const used = [...(actual.get(e.name) ?? [])].sort();
      expect({ metric: e.name, usedBy: [...e.usedBy].sort() }).toEqual({ metric: e.name, usedBy: used });
      // Every metric earns its place: at least one alert or panel reads it.
      expect({ metric: e.name, used: used.length > 0 }).toEqual({ metric: e.name, used: true });
    }
  });
});
