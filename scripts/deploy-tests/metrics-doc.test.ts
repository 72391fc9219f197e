import { readFileSync } from 'node:fs';
import { catalogEntries } from '@tickfleet/telemetry';
import { METRICS_DOC, renderMetricsDoc } from '../gen-metrics-doc.js';

describe('docs/metrics.md', () => {
  it('is the rendering of the metric catalog (regenerate with node --import tsx scripts/gen-metrics-doc.ts)', () => {
    expect(readFileSync(METRICS_DOC, 'utf8')).toBe(renderMetricsDoc());
  });

  it('lists every catalog metric once with its type and labels', () => {
    const doc = readFileSync(METRICS_DOC, 'utf8');
    for (const e of catalogEntries()) {
      const rows = doc.split('\n').filter((l) => l.startsWith(`| \`${e.name}\` |`));
      expect({ metric: e.name, rows: rows.length }).toEqual({ metric: e.name, rows: 1 });
      expect(rows[0]).toContain(`| ${e.type}`);
      for (const label of e.labelNames) expect(rows[0]).toContain(`\`${label}\``);
    }
  });
});
