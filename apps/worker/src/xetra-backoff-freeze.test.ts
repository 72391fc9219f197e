import { alignDown } from '@tickfleet/core';
import { FleetVenueControl } from '@tickfleet/budget';
import { VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { InProcessRig } from '../test/in-process-rig.js';

const DAY = 86_400_000;

/**
 * A Xetra market that keeps answering 429, through a real FleetWorker (in-process, real Redis,
 * SQLite store and sink, the emulation over HTTP): the adapter retries the download three times
 * after its backoff (shortened here from the design's 2 s / 4 s / 8 s, whose computed values the
 * adapter's own test asserts), then the worker freezes the venue fleet-wide for the connector's
 * `freezeMs` (the emulation's 429 has no Retry-After), through the same record every worker reads.
 */
describe('worker: Xetra 429 backoff, then a venue freeze', () => {
  let rig: InProcessRig;

  // One request per market per 10 minutes: the listing passes, every download after it is refused.
  beforeAll(async () => {
    rig = await InProcessRig.start({ venues: { xetra: { limit: { requests: 1, windowMs: 600_000 } } } });
  });
  afterAll(() => rig.close());

  it('retries a refused download three times, then freezes the venue for the connector freeze; only the unit’s market is asked', async () => {
    const { store, mock, conn } = rig;
    await store.connectors.upsert({
      venue: 'xetra',
      baseUrl: mock.baseUrl('xetra'),
      rateLimit: { limit: 5, periodMs: 2000, headroom: 1 },
      maxInflight: 1,
      freezeMs: 30_000,
      freezeMaxMs: 60_000,
    });
    const job = await store.jobs.upsert({ venue: 'xetra', type: 'files', symbol: 'DETR', nextRunAt: Date.now() + DAY });
    const { prefix } = await rig.startWorker({ adapterOptions: { xetra: { backoffBaseMs: 50 } } });

    // Yesterday: a whole day of closed minutes the emulation lists.
    const dayMs = alignDown(Date.now(), '1d') - DAY;
    const queues = new VenueQueues(conn, { prefix });
    await queues.enqueue([{ kind: 'daily-files', venue: 'xetra', jobId: job.id, fromMs: dayMs, toMs: dayMs + DAY, dueAt: Date.now(), enqueuedAt: Date.now() }]);
    const control = new FleetVenueControl(conn, { prefix });
    const frozenAt = Date.now();
    const freeze = await waitFor(() => control.freezeOf('xetra'), 'xetra frozen after its 429s', { timeoutMs: 60_000, intervalMs: 50 });

    expect(freeze.cause).toBe('429');
    // The connector's freeze (no Retry-After from the venue), counted from the fourth 429.
    expect(freeze.untilMs).toBeGreaterThanOrEqual(frozenAt + 30_000 - 1000);
    expect(freeze.untilMs).toBeLessThanOrEqual(Date.now() + 30_000);
    const stats = mock.stats().venues.xetra;
    // One listing (accepted), then the first download and its three retries (all 429).
    expect(Object.keys(stats.scopes ?? {})).toEqual(['DETR']);
    expect(stats.scopes?.DETR).toMatchObject({ requests: 5, weightUsed: 1, overLimitRequests: 4 });
    expect(stats.responses429).toBe(4);
    await queues.close();
  }, 90_000);
});
