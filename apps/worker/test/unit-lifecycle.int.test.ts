import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { type FleetProcess, FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
/** Upper bounds for waiting on a state: generous, since CI shares 2 cores with other suites. */
const STATE_WAIT = { timeoutMs: 90_000, intervalMs: 100 };

interface LogLine {
  msg: string;
  level: string;
  venue?: string;
  unitId?: string;
  jobId?: string;
  kind?: string;
  status?: string;
  tokens?: number;
  elapsed_ms?: number;
  records?: number;
}

/** The pino JSON lines a process wrote (its other output, if any, is skipped). */
function logLines(proc: FleetProcess): LogLine[] {
  return proc
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

async function backfillStatus(fleet: FleetHarness, id: string): Promise<{ status: string; unitsDone: number; unitsTotal: number }> {
  return JSON.parse(await fleet.ok('backfill', 'status', id, '--json')) as { status: string; unitsDone: number; unitsTotal: number };
}

/**
 * A unit's life as a worker process tells it: an `info` start and finish line per unit (venue,
 * unit, job, kind, the budget weight its requests spent and `elapsed_ms`), and a SIGTERM in the
 * middle of a unit that hands the unit back to the queue without burning an attempt, for the next
 * worker to finish, every record stored once.
 */
describe('fleet: unit start/finish lines and graceful shutdown', () => {
  let fleet: FleetHarness;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 20 } } });
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '2');
  });
  afterAll(() => fleet.stop());

  it('logs a start and a finish line per unit, whose tokens add up to the weight the venue counted', async () => {
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    const before = await fleet.mockStats('binance');
    // 3 days of 1m candles: 5 chunks of at most 1000 candles, one klines request each.
    const bf = JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', to - 3 * DAY, to, '--json')) as { id: string };
    await fleet.backfillDone(bf.id, 'backfill done', { timeoutMs: STATE_WAIT.timeoutMs });
    await fleet.stopCleanly(worker);
    const after = await fleet.mockStats('binance');

    const lines = logLines(worker).filter((l) => l.msg === 'unit started' || l.msg === 'unit finished');
    const started = lines.filter((l) => l.msg === 'unit started');
    const finished = lines.filter((l) => l.msg === 'unit finished');
    expect(new Set(started.map((l) => l.unitId)).size).toBe(5);
    expect(started.map((l) => l.unitId).sort()).toEqual(finished.map((l) => l.unitId).sort());
    for (const line of lines) {
      // Both at info, both naming venue, unit, job and kind.
      expect(line).toMatchObject({ level: 'info', venue: 'binance', jobId: 'binance:BTC/USDT:1m:ohlcv', kind: 'backfill' });
      expect(line.unitId).toMatch(/^bf\|/);
    }
    for (const line of finished) {
      expect(line.status).toBe('ok');
      expect(line.records).toBeLessThanOrEqual(1000);
      expect(line.elapsed_ms).toBeGreaterThanOrEqual(0);
      expect(line.tokens).toBeGreaterThan(0);
    }
    // Ground truth: the weight the emulation accepted from this worker is what its units report spending.
    const venueWeight = after.weightUsed - before.weightUsed;
    expect(venueWeight).toBeGreaterThan(0);
    expect(finished.reduce((n, l) => n + l.tokens!, 0)).toBe(venueWeight);
    expect(finished.reduce((n, l) => n + l.records!, 0)).toBe(3 * 1440);
  }, 180_000);

  it('hands a unit interrupted by SIGTERM back to the queue with its attempt unspent; the next worker stores it once', async () => {
    // Slow answers: a unit is surely in flight when the signal arrives.
    fleet.mock.patchScenario({ venues: { binance: { latencyMs: 8000 } } });
    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    const queue = queues.queue('binance');
    try {
      const first = fleet.spawn('worker-first', ['worker']);
      await fleet.ready(first);
      const bf = JSON.parse(await fleet.backfill('binance', 'ETH/USDT', '1m', to - 2 * DAY, to, '--json')) as { id: string; unitsTotal: number };
      expect(bf.unitsTotal).toBe(3);

      // In flight: the queue holds units active and the worker has started them (their first
      // request then waits 8 s for its answer; the emulation counts a request once it is answered).
      const active = await waitFor(
        async () => {
          const jobs = await queue.getJobs(['active']);
          const started = new Set(
            logLines(first)
              .filter((l) => l.msg === 'unit started')
              .map((l) => l.unitId),
          );
          return jobs.length > 0 && jobs.every((j) => started.has(j.id)) ? jobs : null;
        },
        'a unit in flight',
        STATE_WAIT,
      );
      const attemptsBefore = new Map(active.map((j) => [j.id!, j.attemptsMade]));
      // Read from the store in this process: a CLI process here would spend seconds of the 8 s the
      // units stay in flight on a loaded machine before the signal is sent.
      const firstDone = (await fleet.withStore((s) => s.backfills.get(bf.id)))!.unitsDone;

      await fleet.stopCleanly(first);
      // Back in the queue, not failed, not stalled, no attempt spent.
      for (const [id, attempts] of attemptsBefore) {
        const job = await queue.getJob(id);
        expect(job).toBeDefined();
        expect(['delayed', 'waiting', 'prioritized']).toContain(await job!.getState());
        expect(job!.attemptsMade).toBe(attempts);
      }
      const returned = logLines(first).filter((l) => l.msg === 'unit finished' && l.status === 'returned');
      expect(returned.map((l) => l.unitId).sort()).toEqual([...attemptsBefore.keys()].sort());
      expect((await backfillStatus(fleet, bf.id)).unitsDone).toBe(firstDone);

      fleet.mock.patchScenario({ venues: { binance: { latencyMs: 20 } } });
      const second = fleet.spawn('worker-second', ['worker']);
      await fleet.ready(second);
      await fleet.backfillDone(bf.id, 'backfill done', { timeoutMs: STATE_WAIT.timeoutMs });
      await fleet.stopCleanly(second);
      const finishedBySecond = new Set(
        logLines(second)
          .filter((l) => l.msg === 'unit finished' && l.status === 'ok')
          .map((l) => l.unitId),
      );
      for (const id of attemptsBefore.keys()) expect(finishedBySecond.has(id)).toBe(true);

      // Every candle of the range stored exactly once (the sink's rows against the emulation's candles).
      const report = await fleet.candleReport('binance', 'ETH/USDT', '1m', to - 2 * DAY, to);
      expect(report).toMatchObject({ expected: 2 * 1440, stored: 2 * 1440, missing: 0, duplicates: 0, unexpected: 0 });
    } finally {
      await queues.close();
      redis.disconnect();
    }
  }, 240_000);
});
