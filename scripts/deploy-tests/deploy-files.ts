/**
 * Readers shared by the deploy tests: the PromQL of the alert rules and Grafana dashboards, the
 * metric names an expression reads (parsed with Prometheus' own Lezer grammar, not regexes), and
 * which alerts and panels use each metric.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { parse } from 'yaml';
import { parseRulesSource, RULES_SOURCE, type AlertRule } from '../gen-prometheus-rules.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const GRAFANA_DIR = join(ROOT, 'deploy/grafana');

/** One PromQL expression and where it comes from (`alert:<name>` or `panel:<dashboard uid>/<title>`). */
export interface PromqlUse {
  user: string;
  expr: string;
}

export function alertRules(): AlertRule[] {
  const source = parseRulesSource(readFileSync(RULES_SOURCE, 'utf8'));
  return source.groups.flatMap((g) => g.rules).filter((r): r is AlertRule => 'alert' in r);
}

interface GrafanaPanel {
  type: string;
  title: string;
  targets?: Array<{ expr?: string }>;
  panels?: GrafanaPanel[];
}
export interface GrafanaDashboard {
  uid: string;
  title: string;
  panels: GrafanaPanel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown; definition?: string }> };
}

export function dashboards(): Array<{ file: string; dashboard: GrafanaDashboard }> {
  return readdirSync(GRAFANA_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, dashboard: JSON.parse(readFileSync(join(GRAFANA_DIR, file), 'utf8')) as GrafanaDashboard }));
}

function flatPanels(panels: GrafanaPanel[]): GrafanaPanel[] {
  return panels.flatMap((p) => [p, ...flatPanels(p.panels ?? [])]);
}

/** Every PromQL expression of the alert rules and of the dashboards' panels and variables. */
export function promqlUses(): PromqlUse[] {
  const uses: PromqlUse[] = alertRules().map((r) => ({ user: `alert:${r.alert}`, expr: r.expr }));
  for (const { dashboard } of dashboards()) {
    for (const panel of flatPanels(dashboard.panels)) {
      for (const t of panel.targets ?? []) if (t.expr !== undefined) uses.push({ user: `panel:${dashboard.uid}/${panel.title}`, expr: t.expr });
    }
    for (const v of dashboard.templating.list) {
      // label_values(metric, label) is Grafana syntax around a series selector.
      const m = /^label_values\((.+),\s*\w+\)$/.exec(v.definition ?? '');
      if (v.type === 'query' && m?.[1]) uses.push({ user: `variable:${dashboard.uid}/${v.name}`, expr: m[1] });
    }
  }
  return uses;
}

/**
 * Parses `expr` with the PromQL grammar; returns the syntax error positions (empty when valid)
 * and the metric names it selects (`foo{...}` and `{__name__="foo"}`).
 */
export function parsePromql(expr: string): { errors: number[]; metrics: string[] } {
  const tree = parser.parse(expr);
  const errors: number[] = [];
  const metrics = new Set<string>();
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') metrics.add(expr.slice(node.from, node.to));
      if (node.name === 'UnquotedLabelMatcher' || node.name === 'QuotedLabelMatcher') {
        const text = expr.slice(node.from, node.to);
        const m = /^__name__\s*=\s*"([^"]+)"$/.exec(text);
        if (m?.[1]) metrics.add(m[1]);
      }
    },
  });
  return { errors, metrics: [...metrics] };
}

/** Strips the series suffixes a histogram exposes, when what remains is a catalog histogram. */
export function baseMetricName(name: string, isHistogram: (base: string) => boolean): string {
  const m = /^(.+)_(bucket|sum|count)$/.exec(name);
  return m?.[1] && isHistogram(m[1]) ? m[1] : name;
}

/** Runs a YAML parse of a file under the repo root. */
export function readYaml(relPath: string): unknown {
  return parse(readFileSync(join(ROOT, relPath), 'utf8'));
}
