/**
 * docs/deploy.md's alert table against the rules: every alert of the rules source has exactly one
 * row, with its severity, and the table names no alert the rules lack, so the two cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { alertRules, ROOT } from './deploy-files.js';

const DEPLOY_DOC = join(ROOT, 'docs/deploy.md');

/** The `| \`Name\` | severity | … |` rows of the doc's "## Alerts" section, in order. */
function documentedAlerts(): Array<{ alert: string; severity: string }> {
  const doc = readFileSync(DEPLOY_DOC, 'utf8');
  const start = doc.indexOf('\n## Alerts\n');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const rows: Array<{ alert: string; severity: string }> = [];
  for (const line of section.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|/.exec(line);
    if (m) rows.push({ alert: m[1]!, severity: m[2]! });
  }
  return rows;
}

describe("docs/deploy.md's alert table", () => {
  it('has one row per alert of the rules, with its severity, and no other', () => {
    const documented = documentedAlerts();
    const rules = alertRules();
    const byName = (a: { alert: string }, b: { alert: string }): number => a.alert.localeCompare(b.alert);
    expect([...documented].sort(byName)).toEqual(rules.map((r) => ({ alert: r.alert, severity: r.labels.severity })).sort(byName));
    expect(new Set(documented.map((d) => d.alert)).size).toBe(documented.length);
  });
});
