import { waitFor } from '@tickfleet/testkit';
import { type FleetProcess, FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const STATE_WAIT = { timeoutMs: 120_000, intervalMs: 100 };
const BASE_MS = 2000;
const CAP_MS = 8000;
const CLEAN_MS = 5000;

interface FreezeLine {
  msg: string;
  time: string;
  untilMs: number;
  level: number;
  cause: string;
}

/** One freeze incident as the workers reported it: every report of it, and how long it froze the venue. */
interface Incident {
  untilMs: number;
  levels: number[];
  reports: number;
  /** Freeze end minus the earliest report (a report is logged just after the freeze was written). */
  lengthMs: number;
}

function incidents(workers: FleetProcess[]): Incident[] {
  const lines = workers
    .flatMap((w) => w.output().split('\n'))
    .filter((l) => l.startsWith('{') && l.includes('"venue rate limited: frozen fleet-wide"'))
    .map((l) => JSON.parse(l) as FreezeLine);
  const byEnd = new Map<number, FreezeLine[]>();
  for (const line of lines) byEnd.set(line.untilMs, [...(byEnd.get(line.untilMs) ?? []), line]);
  return [...byEnd.entries()]
    .sort(([a], [b]) => a - b)
    .map(([untilMs, group]) => ({
      untilMs,
      levels: [...new Set(group.map((l) => l.level))],
      reports: group.length,
      lengthMs: untilMs - Math.min(...group.map((l) => Date.parse(l.time))),
    }));
}

/** Within the time between the freeze being written and the report being logged (generous on a busy machine). */
function expectLength(incident: Incident, expectedMs: number): void {
  expect(incident.lengthMs).toBeLessThanOrEqual(expectedMs + 5);
  expect(incident.lengthMs).toBeGreaterThan(expectedMs - 1500);
}

/**
 * Polygon answers its own 429 without Retry-After. The fleet then freezes it for the connector's
 * `freezeMs` (not the adapter's guess of a whole rate-limit period), doubles the freeze each time
 * the venue refuses again right after a freeze, up to `freezeMaxMs`, counts an incident reported
 * by several workers once, and starts over after a clean period.
 */
describe('fleet: the 429 freeze of a venue without Retry-After escalates and resets', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    // Two requests per 10-minute window: once spent, every request is refused until the test ends
    // the limit (a window boundary inside the test would only let two more through).
    fleet = await FleetHarness.start({ venues: { polygon: { latencyMs: 300, limit: { requests: 2, windowMs: 600_000 } } } });
  });
  afterAll(() => fleet.stop());

  it('applies freezeMs, doubles up to the cap, escalates once per incident, resets after a clean period', async () => {
    // A connector created without --max-inflight gets Polygon's default cap of 1.
    await fleet.upsertConnector('polygon', '--limit', '100000', '--period', '60s');
    expect(JSON.parse(await fleet.ok('connectors', 'show', 'polygon', '--json'))).toMatchObject({ maxInflight: 1, freezeMs: 60_000, freezeMaxMs: 900_000 });
    // The adapter's own guess after a Retry-After-less 429 is the 60 s period; freezeMs must win.
    await fleet.upsertConnector(
      'polygon',
      '--limit',
      '100000',
      '--period',
      '60s',
      '--max-inflight',
      '4',
      '--freeze',
      '2s',
      '--freeze-max',
      '8s',
      '--freeze-reset',
      '5s',
    );
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    for (const s of ['AAPL', 'MSFT', 'NVDA', 'TSLA']) await fleet.backfill('polygon', s, '1m', to - 20 * DAY, to);

    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    for (const w of workers) await fleet.ready(w);

    // Incidents: 2 s, then refused right after each freeze: 4 s, 8 s (the cap), 8 s.
    await waitFor(() => incidents(workers).length >= 4, 'four freeze incidents', STATE_WAIT);
    const seen = incidents(workers).slice(0, 4);
    expect(seen.map((i) => i.levels)).toEqual([[0], [1], [2], [2]]);
    [BASE_MS, 2 * BASE_MS, CAP_MS, CAP_MS].forEach((ms, k) => expectLength(seen[k]!, ms));
    // Ground truth: the venue refused more requests than there were incidents (several in flight
    // at once, on both workers), yet each incident escalated once.
    const stats = await fleet.mockStats('polygon');
    expect(stats.responses429).toBeGreaterThan(seen.length);
    expect(seen.reduce((n, i) => n + i.reports, 0)).toBeGreaterThan(seen.length);

    // The venue stops refusing: after a clean period past the last freeze, a new refusal starts over at freezeMs.
    fleet.mock.patchScenario({ venues: { polygon: { limit: { enabled: false } } } });
    const okBefore = stats.responses2xx;
    await waitFor(
      async () => {
        const last = incidents(workers).at(-1)!;
        return Date.now() > last.untilMs + CLEAN_MS + 500 && (await fleet.mockStats('polygon')).responses2xx >= okBefore + 2;
      },
      'a clean period with answered requests',
      STATE_WAIT,
    );
    const before = incidents(workers).length;
    fleet.mock.patchScenario({ venues: { polygon: { limit: { enabled: true } } } });
    await waitFor(() => incidents(workers).length > before, 'a refusal after the clean period', STATE_WAIT);
    const fresh = incidents(workers)[before]!;
    expect(fresh.levels).toEqual([0]);
    expectLength(fresh, BASE_MS);
    console.log(
      `freeze incidents (level: length ms / reports): ${[...seen, fresh].map((i) => `${i.levels[0]}: ${i.lengthMs} / ${i.reports}`).join(', ')}; polygon 429s before the reset: ${stats.responses429}`,
    );

    for (const w of workers) await fleet.stopCleanly(w);
  }, 300_000);
});
