import { FleetHarness } from '@tickfleet/testkit/fleet';
import { runStoreOutage, sqliteLockFault, type OutageResult } from './fixtures/store-outage.js';

const SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT', 'BNB/USDT'];

/**
 * Chaos: the SQLite state store is locked by another process (a long foreign write transaction)
 * for 20 s, and after 5 s for 45 s, while two workers and a scheduler catch up four symbols.
 * Reads go on (WAL), every write times out: each worker spends only the rest of its budget lease,
 * then waits for the store; units that cannot record their progress go back to the queue
 * without spending an attempt, /healthz keeps answering, and the fleet catches up by itself once
 * the lock is gone. Ends comparing the sink with `expectedCandles` and the emulation's counters.
 */
describe('chaos: SQLite state store locked by another process for 20 s and 45 s', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 200, limit: { weight: 100, windowMs: 10_000 } } } });
  });
  afterAll(() => fleet.stop());

  it('never goes over the venue limit, keeps answering health probes, and catches up completely by itself', async () => {
    const path = fleet.dir.file('state.db');
    const r: OutageResult = await runStoreOutage(fleet, [sqliteLockFault(path, 20_000), sqliteLockFault(path, 45_000)], SYMBOLS);
    report('store-outage (SQLite lock)', r);
    expect(r.stats.overLimitRequests).toBe(0);
    expect(r.stats.maxWindowWeight).toBeLessThanOrEqual(r.stats.limit);
    for (const s of SYMBOLS) {
      expect(r.reports[s]).toMatchObject({ missing: 0, duplicates: 0, unexpected: 0 });
      expect(r.cursors[s]).toBe(r.reports[s]!.newest);
    }
    // The store really was away for the fleet, and it coped: leases only, units put back.
    expect(r.fallbackEngaged).toBe(true);
    expect(r.fallbackEnded).toBe(true);
    // Collection was still under way when the last (45 s) lock began, so units met it and went back.
    expect(r.faults.at(-1)!.pagesLeft).toBeGreaterThan(0);
    expect(r.storeUnavailableUnits).toBeGreaterThan(0);
    for (const f of r.faults) expect(f.healthAnswered).toBe(f.healthProbes);
  }, 300_000);
});

function report(name: string, r: OutageResult): void {
  const stored = Object.values(r.reports).reduce((n, x) => n + x.stored, 0);
  const expected = Object.values(r.reports).reduce((n, x) => n + x.expected, 0);
  const missing = Object.values(r.reports).reduce((n, x) => n + x.missing, 0);
  const dups = Object.values(r.reports).reduce((n, x) => n + x.duplicates, 0);
  process.stdout.write(
    `\n${name}: ${r.faults.map((f) => `${f.name} (begun with ${f.pagesLeft} pages left): ${f.requestsDuring} venue requests meanwhile, /healthz ${f.healthAnswered}/${f.healthProbes} answered (slowest ${f.slowestHealthMs} ms)`).join('; ')}; ` +
      `${r.storeUnavailableUnits} units put back on the queue (no attempt spent); fallback engaged ${r.fallbackEngaged}, ended ${r.fallbackEnded}; ` +
      `stored ${stored}/${expected} candles (missing ${missing}, duplicates ${dups}); over-limit ${r.stats.overLimitRequests} of ${r.stats.requests} requests, ` +
      `max window weight ${r.stats.maxWindowWeight}/${r.stats.limit}; cursors = newest stored; wall ${Math.round(r.wallMs / 1000)} s\n`,
  );
}
