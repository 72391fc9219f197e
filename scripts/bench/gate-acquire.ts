/**
 * The budget gate's cost per request on one SQLite store (one process): `BudgetGate.beforeRequest`
 * with 1 and 8 concurrent request loops for 2 s each, on a limit no run reaches (every request
 * granted). It is what a request waits for before it is sent: the store acquire itself, and since
 * leases, mostly the lease in the gate (docs/benchmarks/acquire.md).
 *
 *   node --import tsx scripts/bench/gate-acquire.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '@tickfleet/core';
import { openStore } from '@tickfleet/store';
import { BudgetGate } from '@tickfleet/budget';
import { gateMetrics } from '../../packages/budget/test/fixtures/gate-metrics.js';

const VENUE = 'benchvenue';
const dir = mkdtempSync(join(tmpdir(), 'tickfleet-gate-bench-'));
const store = await openStore(`sqlite://${join(dir, 'state.db')}`);
try {
  await store.connectors.upsert({ venue: VENUE, baseUrl: 'https://bench.example.com', rateLimit: { limit: 1_000_000_000, periodMs: 3_600_000, headroom: 1 } });
  const gate = new BudgetGate({ budgets: store.budgets, clock: systemClock, metrics: gateMetrics(), freezes: { frozenForMs: async () => 0 } });
  for (const loops of [1, 8]) {
    let n = 0;
    const startedAt = performance.now();
    const end = startedAt + 2000;
    await Promise.all(
      Array.from({ length: loops }, async () => {
        while (performance.now() < end) {
          await gate.beforeRequest({ venue: VENUE, endpoint: 'bench', weight: 1 });
          n++;
        }
      }),
    );
    process.stdout.write(`gate, ${loops} loop(s): ${n} requests, ${(((performance.now() - startedAt) * 1000) / n).toFixed(2)} µs per request\n`);
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
