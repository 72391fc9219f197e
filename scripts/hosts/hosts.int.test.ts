import { hostsUnsupported } from './netns.js';
import { HostTopology } from './topology.js';
import {
  clockScenario,
  endCheckFailures,
  formatEndChecks,
  HOST_SCENARIO_DEFAULTS,
  partitionScenario,
  prepareFleet,
  scaleScenario,
  venueScenario,
  type EndChecks,
} from './scenarios.js';

const unsupported = hostsUnsupported();
const describeHosts = unsupported ? describe.skip : describe;
if (unsupported) process.stdout.write(`\nhosts: skipped, ${unsupported}\n`);

const fmt = (u: number | null): string => (u === null ? 'n/a' : u.toFixed(2));

function expectEndChecks(c: EndChecks): void {
  expect(endCheckFailures(c)).toEqual([]);
  expect(c.backfills.length).toBeGreaterThan(0);
}

/**
 * The fleet across hosts, short version (scripts/hosts/run.ts runs the full one): Redis, the
 * store, the venue emulations, the scheduler and three worker hosts, each its own network
 * namespace; Redis and store links through a 5 ms delaying proxy; venue service times 50-300 ms.
 * The scenarios run one after another on one fleet, each with its own backfill and end checks.
 */
describeHosts('hosts: the fleet across network namespaces (short version)', () => {
  let t: HostTopology;
  let liveSince = 0;
  beforeAll(async () => {
    t = await HostTopology.start({ scenario: venueScenario() as never });
    ({ liveSince } = await prepareFleet(t));
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
  }, 60_000);

  it('scenario 1, scaled 1 -> 3 worker processes over 3 hosts: budget used, in-flight within the cap, every candle once', async () => {
    const r = await scaleScenario(t, liveSince, { counts: [1, 2, 3], stepMs: 12_000, backfillDays: 25, endDaysAgo: 10 });
    process.stdout.write(
      `\nhosts scenario 1 (scale): ` +
        r.steps
          .map((s) => `${s.workers} worker(s): utilisation ${fmt(s.utilisation)} over ${s.windows} windows, in-flight max ${s.maxInflight}/${r.cap}`)
          .join('; ') +
        `\n  ${formatEndChecks(r.checks)}\n`,
    );
    expectEndChecks(r.checks);
    expect(r.checks.overLimit).toBe(0);
    for (const s of r.steps) expect(s.maxInflight).toBeLessThanOrEqual(r.cap);
  }, 300_000);

  it('scenario 4, one worker host 30 s fast (libfaketime): the venue limit holds, every candle once', async () => {
    const r = await clockScenario(t, liveSince, { host: 'w3', offset: '+30s', holdMs: 20_000, backfillDays: 14, endDaysAgo: 40 });
    process.stdout.write(`\nhosts scenario 4 (w3 clock +30 s): utilisation ${fmt(r.utilisation)}\n  ${formatEndChecks(r.checks)}\n`);
    expectEndChecks(r.checks);
    expect(r.checks.overLimit).toBe(0);
  }, 300_000);

  /**
   * Known failure (issue 39, "the budget under partition"): the partitioned host budgets on its
   * fallback share while the others spend the whole store budget, so a window can be overspent.
   * The test measures it; the capacity-lease budget is the fix. Until then the over-limit figure
   * is reported, not asserted to be 0, and every other end check must hold.
   */
  it('scenario 2, worker host w2 loses the store (keeps Redis) for 30 s: every candle once; over-limit measured (known overspend)', async () => {
    const r = await partitionScenario(t, liveSince, { host: 'w2', peer: 'store', holdMs: 30_000, backfillDays: 24, endDaysAgo: 60 });
    process.stdout.write(
      `\nhosts scenario 2 (w2 <-> store cut 30 s): ${r.requestsDuring} venue requests during the split, ${r.overLimitDuring} over the limit during it` +
        `\n  ${formatEndChecks(r.checks)}\n  KNOWN FAILURE: over-limit ${r.checks.overLimit} (goal 0; capacity leases fix it)\n`,
    );
    expectEndChecks(r.checks);
    expect(r.checks.maxWindowWeight).toBeLessThanOrEqual(HOST_SCENARIO_DEFAULTS.limitWeight);
  }, 300_000);
});
