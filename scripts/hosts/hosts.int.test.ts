import { hostsUnsupported } from './netns.js';
import { HostTopology } from './topology.js';
import {
  clockScenario,
  endCheckFailures,
  formatEndChecks,
  formatWaits,
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

/** The switch: true once the capacity-lease budget is in, and every scenario must end with 0 over the limit. */
const EXPECT_ZERO_OVER_LIMIT = true;

/**
 * KNOWN FAILURE (issue 39): the goal is 0 requests over the venue's limit in every scenario; the
 * budget does not reach it across hosts yet. A grant decided near a window's end reaches the venue
 * in the next window when the round trip (or a busy machine) delays it past the gate's fixed 5%
 * guard, and a worker host cut off from the store spends its fallback share while the others
 * spend the whole store budget. Until the capacity-lease budget lands, each scenario reports its
 * over-limit count and asserts the bound today's design gives instead of 0: late grants at most
 * the fleet's in-flight cap; a split host's overspend at most what it sent while split.
 */
function knownOverspend(scenario: string, overLimit: number): string {
  return overLimit && !EXPECT_ZERO_OVER_LIMIT ? `\n  KNOWN FAILURE (issue 39, goal 0): ${scenario}: ${overLimit} request(s) over the venue's limit` : '';
}

function expectOverLimit(overLimit: number, knownBound: number): void {
  if (EXPECT_ZERO_OVER_LIMIT) expect(overLimit).toBe(0);
  else expect(overLimit).toBeLessThanOrEqual(knownBound);
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
  const cap = HOST_SCENARIO_DEFAULTS.maxInflight;
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

  it('scenario 1, scaled 1 -> 3 worker processes over 3 hosts: in-flight within the cap, every candle once (over-limit: known failure, bounded)', async () => {
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
        `\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}${knownOverspend('scale', r.checks.overLimit)}\n`,
    );
    expectEndChecks(r.checks);
    for (const s of r.steps) {
      expect(s.maxInflight).toBeLessThanOrEqual(r.cap);
      // Demand lasted through every step: the utilisation figure covers whole windows of it.
      expect(s.windows).toBeGreaterThan(0);
    }
    expectOverLimit(r.checks.overLimit, cap);
  }, 300_000);

  it('scenario 4, one worker host 30 s fast (libfaketime): every candle once (over-limit: known failure, bounded)', async () => {
    const from = Date.now();
    const r = await clockScenario(t, liveSince, { host: 'w3', offset: '+30s', holdMs: 15_000, backfillDays: 10, endDaysAgo: 100 });
    process.stdout.write(
      `\nhosts scenario 4 (w3 clock +30 s, ${secondsSince(from)} s): utilisation ${fmt(r.utilisation)}\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}${knownOverspend('clock +30 s', r.checks.overLimit)}\n`,
    );
    expectEndChecks(r.checks);
    expectOverLimit(r.checks.overLimit, cap);
  }, 300_000);

  it('scenario 2, worker host w2 loses the store (keeps Redis) for 30 s: every candle once (over-limit: known failure, bounded)', async () => {
    const from = Date.now();
    const r = await partitionScenario(t, liveSince, { hosts: ['w2'], peers: ['store'], holdMs: 30_000, backfillDays: 20, endDaysAgo: 130 });
    process.stdout.write(
      `\nhosts scenario 2 (w2 <-> store cut 30 s, ${secondsSince(from)} s): ${r.requestsDuring} venue requests during the split (${r.hostRequestsDuring ?? 'n/a: metrics unanswered'} from w2, fallback budget engaged: ${r.fallbackEngaged}), ${r.overLimitDuring} over the limit during it` +
        `\n  ${formatEndChecks(r.checks)}; ${formatWaits(r.checks)}${knownOverspend('store split', r.checks.overLimit)}\n`,
    );
    expectEndChecks(r.checks);
    // The split host's own count of what it sent while split: its metrics answer over the kept links.
    expect(r.hostRequestsDuring).not.toBeNull();
    expectOverLimit(r.checks.overLimit, r.hostRequestsDuring! + cap);
  }, 300_000);
});
