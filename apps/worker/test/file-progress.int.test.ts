import { alignDown } from '@tickfleet/core';
import { DEFAULT_SEED, tradesInFile, xetraFilesBetween } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const MIN = 60_000;
/** The emulation lists the files of the last 24 hours (XETRA_LISTING_MS). */
const LISTING_MS = DAY;

interface ActiveUnit {
  venue: string;
  kind: string;
  jobId: string;
  startedAt: number | null;
  progress: { files: number; filesTotal: number; bytes: number; records: number } | null;
}

/**
 * A long unit shows how far it is: a Xetra daily-files unit (one paced download per 400 ms)
 * publishes the files of the day's listing done, the bytes and the records so far as its BullMQ
 * progress, which `tickfleet units active` (and bull-board) show while it runs.
 */
describe('fleet: progress of a long daily-files unit', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start();
  });
  afterAll(() => fleet.stop());

  it('shows files done of the listing, bytes and records part way through, matching the emulation', async () => {
    await fleet.upsertConnector('xetra', '--limit', '5', '--period', '2s', '--headroom', '1', '--max-inflight', '1');
    // Not due before tomorrow: the test enqueues its one unit itself.
    const job = await fleet.withStore((s) => s.jobs.upsert({ venue: 'xetra', type: 'files', symbol: 'DETR', nextRunAt: Date.now() + DAY }));
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    // A UTC day the venue lists at least 12 hours of: today after noon, else yesterday.
    const now = Date.now();
    const dayMs = now - alignDown(now, '1d') >= 12 * 3_600_000 ? alignDown(now, '1d') : alignDown(now, '1d') - DAY;
    const enqueuedMinute = alignDown(Date.now(), '1m');
    await fleet.enqueue([{ kind: 'daily-files', venue: 'xetra', jobId: job.id, fromMs: dayMs, toMs: dayMs + DAY, dueAt: now, enqueuedAt: now }]);

    const seen = await waitFor(
      async () => {
        const [unit] = JSON.parse(await fleet.ok('units', 'active', 'xetra', '--json')) as ActiveUnit[];
        const p = unit?.progress;
        return p && p.files > 0 && p.files < p.filesTotal ? unit : undefined;
      },
      'the daily-files unit part way through its files',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(seen).toMatchObject({ venue: 'xetra', kind: 'daily-files', jobId: job.id, startedAt: expect.any(Number) });
    expect(seen.progress!.bytes).toBeGreaterThan(0);

    // Ground truth: the day's files as the emulation listed them in the minute the unit listed
    // (between the enqueue and now), oldest first; the unit's records are the trades of the first `files`.
    const listings: string[][] = [];
    for (let minute = enqueuedMinute; minute <= alignDown(Date.now(), '1m'); minute += MIN) {
      listings.push(xetraFilesBetween('DETR', Math.max(dayMs, minute - LISTING_MS), Math.min(dayMs + DAY, minute), DEFAULT_SEED));
    }
    const { files, filesTotal, records } = seen.progress!;
    const matching = listings.filter(
      (names) => names.length === filesTotal && names.slice(0, files).reduce((n, name) => n + (tradesInFile(name, DEFAULT_SEED)?.length ?? 0), 0) === records,
    );
    expect(matching.length).toBeGreaterThan(0);
    // The units of other venues are not listed; a venue with no running unit lists none.
    expect(JSON.parse(await fleet.ok('units', 'active', 'binance', '--json'))).toEqual([]);
    expect(await fleet.ok('units', 'active', 'xetra')).toMatch(
      new RegExp(`daily-files\\s+${job.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\\d+/${filesTotal} files`),
    );
  }, 240_000);
});
