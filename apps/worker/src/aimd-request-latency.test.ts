import { alignDown } from '@tickfleet/core';
import { FleetVenueControl } from '@tickfleet/budget';
import { VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { InProcessRig } from '../test/in-process-rig.js';

const DAY = 86_400_000;
const MINUTE = 60_000;
/** AIMD's thresholds here: a p95 over 1 s subtracts one, under 0.5 s may add one (high enough that a busy machine's local requests stay under it). */
const P95_HIGH_MS = 1000;
/** Minutes of files the long unit downloads (a request each, plus the listing). */
const UNIT_MINUTES = 25;

/**
 * One long Xetra unit (25 minutes of files, one request each, paced fleet-wide per market)
 * through a real FleetWorker (in-process, real Redis, SQLite store and sink, the emulation over
 * HTTP). AIMD's p95 is over the unit's requests as they answer: a unit that takes longer than
 * the p95 threshold with fast requests does not slow the venue down, and one whose requests are
 * slow does so while it runs, once 20 of them (minSamples) are in. When the worker fed AIMD one
 * latency per unit (its whole duration), the window held a single sample per unit: the slow unit
 * changed nothing, and every long unit counted as slow.
 */
describe('worker: AIMD judges the latency of each request, not of the whole unit', () => {
  let rig: InProcessRig;

  beforeAll(async () => {
    rig = await InProcessRig.start({ venues: { xetra: { limit: { requests: 1000, windowMs: 1000 } } } });
  });
  afterEach(() => rig.stopWorker());
  afterAll(() => rig.close());

  /** Runs one unit of UNIT_MINUTES of a market's files (a fresh job per market); returns the venue's AIMD window and the unit's duration. */
  async function runLongUnit(latencyMs: number, market: string) {
    const { store, mock, conn } = rig;
    mock.reset();
    mock.patchScenario({ venues: { xetra: { latencyMs } } });
    // 10 requests a second per market (evenly paced): 21 requests take at least 2 s, twice the p95 threshold.
    await store.connectors.upsert({
      venue: 'xetra',
      baseUrl: mock.baseUrl('xetra'),
      rateLimit: { limit: 10, periodMs: 1000, headroom: 1 },
      maxInflight: 4,
      aimd: { min: 1, max: 4, maxP95LatencyMs: P95_HIGH_MS, lowP95LatencyMs: P95_HIGH_MS / 2, start: 'ceiling' },
    });
    const job = await store.jobs.upsert({ venue: 'xetra', type: 'files', symbol: market, nextRunAt: Date.now() + DAY });
    // The unit downloads the day's listed files after the job's cursor: the last UNIT_MINUTES of them.
    const dayMs = alignDown(Date.now() - 2 * 3_600_000, '1d');
    const lastClosedMs = Math.min(dayMs + DAY, alignDown(Date.now(), '1m')) - MINUTE;
    await store.jobs.advanceCursor(job.id, lastClosedMs - UNIT_MINUTES * MINUTE);
    const { prefix } = await rig.startWorker({ sinkFile: `data-${latencyMs}.db` });

    const queues = new VenueQueues(conn, { prefix });
    const control = new FleetVenueControl(conn, { prefix });
    control.configure('xetra', { ...control.limitsOf('xetra'), min: 1, max: 4 });
    const startedAt = performance.now();
    await queues.enqueue([{ kind: 'daily-files', venue: 'xetra', jobId: job.id, fromMs: dayMs, toMs: dayMs + DAY, dueAt: Date.now(), enqueuedAt: Date.now() }]);
    await waitFor(async () => (await control.snapshot('xetra')).unitsOk >= 1, 'the long unit finished', { timeoutMs: 120_000, intervalMs: 100 });
    const unitMs = performance.now() - startedAt;
    await queues.close();
    return { snapshot: await control.snapshot('xetra'), unitMs, requests: mock.stats().venues.xetra.requests };
  }

  it('a long unit of fast requests is judged by its requests: every one is a sample, and the venue keeps its concurrency', async () => {
    const { snapshot, unitMs, requests } = await runLongUnit(0, 'DETR');
    // The unit took longer than the p95 threshold; it sent enough requests for a judgment.
    expect(unitMs).toBeGreaterThan(P95_HIGH_MS);
    expect(requests).toBeGreaterThanOrEqual(21);
    // Every request the emulation answered is one sample of the window, and one unit outcome.
    expect(snapshot).toMatchObject({ concurrency: 4, windowOutcomes: 1, windowFailures: 0, windowRequests: requests });
  }, 150_000);

  it('a long unit of slow requests steps the venue down while it runs', async () => {
    const { snapshot, requests } = await runLongUnit(P95_HIGH_MS + 300, 'DFRA');
    expect(requests).toBeGreaterThanOrEqual(21);
    expect(requests).toBeLessThan(40);
    // -1 once 20 slow requests were in (a new window started then, fewer than 20 after it).
    expect(snapshot.concurrency).toBe(3);
    expect(snapshot.windowRequests).toBeLessThanOrEqual(requests - 20);
  }, 150_000);
});
