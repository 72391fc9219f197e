import { alignDown } from '@tickfleet/core';
import { VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { TREASURY_CURVE_SERIES } from '@tickfleet/venues';
import { InProcessRig } from '../test/in-process-rig.js';

const DAY = 86_400_000;
const FRED_KEY = 'fredtestkey00000000000000000000a';
/** FRED's budget here: 15 requests per 6 s window (headroom 1), so one curve unit (11) fits a window, two do not. */
const LIMIT = 15;
const PERIOD_MS = 6000;

/**
 * FRED's Treasury curve is one unit of 11 requests. Through a real FleetWorker (in-process, real
 * Redis, SQLite store and sink, the FRED emulation over HTTP), the unit starts in a window whose
 * budget other units already spent most of: it reserves its 11 requests before the first, so the
 * budget refuses it before it sent anything (it yields until the next window) rather than after
 * 4, when its next run would send those 4 again. The emulation's request counter is the judge.
 */
describe('worker: a unit reserves its requests before the first', () => {
  let rig: InProcessRig;

  beforeAll(async () => {
    rig = await InProcessRig.start({ venues: { fred: { limit: { requests: LIMIT, windowMs: PERIOD_MS } } } });
  });
  afterAll(() => rig.close());

  it('a curve unit refused by the budget yields before its first request, then sends each of its 11 requests once', async () => {
    const { store, mock, conn } = rig;
    await store.connectors.upsert({ venue: 'fred', baseUrl: mock.baseUrl('fred'), rateLimit: { limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 } });
    const today = alignDown(Date.now(), '1d');
    const job = await store.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'treasury-curve', since: today - 20 * DAY, nextRunAt: Date.now() + DAY });
    const { prefix } = await rig.startWorker({ adapterOptions: { fred: { apiKey: FRED_KEY } } });

    // Early in a window, other units spend 11 of its 15: 4 left, fewer than the curve needs, and
    // the window's end more than the gate's inline wait (1 s) away, so a refusal yields the unit.
    await new Promise((r) => setTimeout(r, PERIOD_MS - (Date.now() % PERIOD_MS) + 20));
    const spent = await store.budgets.acquire('fred', 11);
    expect(spent).toMatchObject({ ok: true, used: 11 });
    const queues = new VenueQueues(conn, { prefix });
    await queues.enqueue([{ kind: 'series', venue: 'fred', jobId: job.id, dueAt: Date.now(), enqueuedAt: Date.now() }]);
    await waitFor(async () => ((await store.jobs.get(job.id))?.stats.runs ?? 0) >= 1, 'the curve unit done', { timeoutMs: 60_000, intervalMs: 100 });

    const stats = mock.stats().venues.fred;
    // Each tenor asked once: nothing sent twice, although the unit was refused once.
    expect(stats.requests).toBe(TREASURY_CURVE_SERIES.length);
    expect(stats).toMatchObject({ responses2xx: TREASURY_CURVE_SERIES.length, responses429: 0, overLimitRequests: 0 });
    // All 11 arrived in one later window than the one the unit was refused in.
    if (!spent.ok) throw new Error('pre-spend refused');
    expect(stats.windows.filter((w) => w.weight > 0)).toEqual([{ startMs: expect.any(Number), weight: TREASURY_CURVE_SERIES.length }]);
    expect(stats.windows.find((w) => w.weight > 0)!.startMs).toBeGreaterThan(spent.windowStartMs!);
  }, 90_000);
});
