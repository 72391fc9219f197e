import { FleetHarness } from '@tickfleet/testkit/fleet';
import { runStoreOutage, startMongoWireProcess, type OutageResult, type StoreFault } from './fixtures/store-outage.js';

const SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT', 'BNB/USDT'];

/**
 * Chaos: the fleet's MongoDB state store (the wire server, in its own process) is stopped with
 * SIGSTOP for 20 s: connections stay open and nothing answers, the worst case for a client. Store
 * calls give up after the socket timeout, budgets fall back to each worker's share, units go back
 * to the queue, and after SIGCONT the fleet catches up by itself.
 */
describe('chaos: MongoDB state store stopped (SIGSTOP) for 20 s', () => {
  let fleet: FleetHarness;
  let mongo: Awaited<ReturnType<typeof startMongoWireProcess>>;
  beforeAll(async () => {
    mongo = await startMongoWireProcess();
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 200, limit: { weight: 100, windowMs: 10_000 } } } });
    // The harness's store URL is read by every command and role it starts: point it at MongoDB.
    Object.defineProperty(fleet, 'storeUrl', { value: `${mongo.url.replace(/\/?$/, '/')}chaos${fleet.prefix}` });
  });
  afterAll(async () => {
    await fleet.stop();
    await mongo.stop();
  });

  it('never goes over the venue limit, keeps answering health probes, and catches up completely by itself', async () => {
    const stop: StoreFault = {
      name: 'MongoDB SIGSTOP 20 s',
      holdMs: 20_000,
      begin: async () => void mongo.child.kill('SIGSTOP'),
      end: async () => void mongo.child.kill('SIGCONT'),
    };
    const r: OutageResult = await runStoreOutage(fleet, [stop], SYMBOLS);
    const stored = Object.values(r.reports).reduce((n, x) => n + x.stored, 0);
    const expected = Object.values(r.reports).reduce((n, x) => n + x.expected, 0);
    const f = r.faults[0]!;
    process.stdout.write(
      `\nstore-outage (MongoDB SIGSTOP): begun with ${f.pagesLeft} pages left, ${f.requestsDuring} venue requests during the stop, /healthz ${f.healthAnswered}/${f.healthProbes} answered (slowest ${f.slowestHealthMs} ms); ` +
        `${r.storeUnavailableUnits} units put back on the queue; fallback engaged ${r.fallbackEngaged}, ended ${r.fallbackEnded}; stored ${stored}/${expected} candles; ` +
        `over-limit ${r.stats.overLimitRequests} of ${r.stats.requests} requests, max window weight ${r.stats.maxWindowWeight}/${r.stats.limit}; wall ${Math.round(r.wallMs / 1000)} s\n`,
    );
    expect(r.stats.overLimitRequests).toBe(0);
    expect(r.stats.maxWindowWeight).toBeLessThanOrEqual(r.stats.limit);
    for (const s of SYMBOLS) {
      expect(r.reports[s]).toMatchObject({ missing: 0, duplicates: 0, unexpected: 0 });
      expect(r.cursors[s]).toBe(r.reports[s]!.newest);
    }
    // Collection was under way when the store stopped, so units met the outage and went back.
    expect(f.pagesLeft).toBeGreaterThan(0);
    expect(r.storeUnavailableUnits).toBeGreaterThan(0);
    expect(f.healthAnswered).toBe(f.healthProbes);
  }, 300_000);
});
