import { hostsUnsupported } from './netns.js';
import { HostTopology } from './topology.js';
import {
  clockScenario,
  endCheckFailures,
  formatEndChecks,
  formatWaits,
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

const secondsSince = (ms: number): number => Math.round((Date.now() - ms) / 1000);

/**
 * The fleet across hosts, short version (scripts/hosts/run.ts runs the full one): Redis, the
 * store, the venue emulations, the scheduler and three worker hosts, each its own network
 * namespace; Redis and store links through a 5 ms delaying proxy; venue service times 50-300 ms.
 * The scenarios run one after another on one fleet, each with its own backfill and end checks.
 */
describeHosts('hosts: the fleet across network namespaces (short version)', () => {
  let t: HostTopology;
  let liveSince = 0;
  const began = Date.now();
  beforeAll(async () => {
    t = await HostTopology.start({ scenario: venueScenario() as never });
    ({ liveSince } = await prepareFleet(t));
    process.stdout.write(`\nhosts: topology and scheduler up in ${secondsSince(began)} s\n`);
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    process.stdout.write(`\nhosts: short version ${secondsSince(began)} s in all\n`);
  }, 60_000);

  it('scenario 1, scaled 1 -> 3 worker processes over 3 hosts: in-flight within the cap, every candle once, 0 over the limit', async () => {
    const from = Date.now();
    // 28 days of 2 series: about 83 requests, 46 s of the budget, outlasting both steps and the starts between them.
    const r = await scaleScenario(t, liveSince, { counts: [1, 3], stepMs: 15_000, backfillDays: 28, endDaysAgo: 10 });
    process.stdout.write(
      `\nhosts scenario 1 (scale, ${secondsSince(from)} s): ` +
        r.steps
          .map(
            (s) =>
              `${s.workers} worker(s) (ready in ${s.transitionS} s): utilisation ${fmt(s.utilisation)} over ${s.windows} windows, in-flight max ${s.maxInflight}/${r.cap}`,
          )
          .join('; ') +
        `\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}\n`,
    );
    expectEndChecks(r.checks);
    for (const s of r.steps) {
      expect(s.maxInflight).toBeLessThanOrEqual(r.cap);
      // Demand lasted through every step: the utilisation figure covers whole windows of it.
      expect(s.windows).toBeGreaterThan(0);
    }
    expect(r.checks.overLimit).toBe(0);
  }, 300_000);

  it('scenario 4, one worker host 30 s fast (libfaketime): every candle once, 0 over the limit', async () => {
    const from = Date.now();
    const r = await clockScenario(t, liveSince, { host: 'w3', offset: '+30s', holdMs: 15_000, backfillDays: 10, endDaysAgo: 100 });
    process.stdout.write(
      `\nhosts scenario 4 (w3 clock +30 s, ${secondsSince(from)} s): utilisation ${fmt(r.utilisation)}\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}\n`,
    );
    expectEndChecks(r.checks);
    expect(r.checks.overLimit).toBe(0);
  }, 300_000);

  it('scenario 2, worker host w2 loses the store (keeps Redis) for 30 s: every candle once, 0 over the limit', async () => {
    const from = Date.now();
    const r = await partitionScenario(t, liveSince, { hosts: ['w2'], peers: ['store'], holdMs: 30_000, backfillDays: 20, endDaysAgo: 130 });
    process.stdout.write(
      `\nhosts scenario 2 (w2 <-> store cut 30 s, ${secondsSince(from)} s): ${r.requestsDuring} venue requests during the split (${r.hostRequestsDuring ?? 'n/a: metrics unanswered'} from w2, fallback budget engaged: ${r.fallbackEngaged}), ${r.overLimitDuring} over the limit during it` +
        `\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}\n`,
    );
    expectEndChecks(r.checks);
    // The split host's own count of what it sent while split: its metrics answer over the kept links.
    expect(r.hostRequestsDuring).not.toBeNull();
    expect(r.checks.overLimit).toBe(0);
  }, 300_000);
});
