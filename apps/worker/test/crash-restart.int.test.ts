import { alignDown, lastClosedOpenTime } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const HOUR = 3_600_000;
const SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT', 'BNB/USDT'];

/**
 * Crash and restart with real processes: SIGKILL a worker in the middle of a unit, and restart the
 * scheduler mid-run. Another worker finishes the killed unit after BullMQ's stalled-unit recovery,
 * no unit is enqueued twice, the sink ends with every expected candle exactly once and each job's
 * cursor is the open time of its newest stored candle.
 */
describe('fleet: worker SIGKILL and scheduler restart', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 400 } } });
  });
  afterAll(() => fleet.stop());

  it('recovers the killed unit on another worker and stores every candle exactly once', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '4');
    const since = alignDown(Date.now() - 72 * HOUR, '1m');
    for (const s of SYMBOLS) await fleet.ok('jobs', 'add', 'binance', 'ohlcv', s, '--timeframe', '1m', '--since', new Date(since).toISOString());

    const debug = { LOG_LEVEL: 'debug' };
    let scheduler = fleet.spawn('scheduler-a', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500', TICKFLEET_SCHEDULER_LEADER_TTL_MS: '2000' });
    const victim = fleet.spawn('worker-victim', ['worker'], debug);
    await fleet.ready(victim);
    await fleet.ready(scheduler, 'scheduler started');

    // Wait until the victim is in the middle of a unit (each catches up 72 h = 5 pages of 400 ms):
    // one its log shows started at least 700 ms ago and not done, read from its output at the
    // moment of the kill (not a fixed sleep after an earlier reading).
    const inTheMiddle = (): boolean => {
      const lines = victim
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; unitId?: string; time: string | number });
      const done = new Set(lines.filter((l) => l.msg === 'unit done' || l.msg === 'unit finished').map((l) => l.unitId));
      return lines.some((l) => l.msg === 'unit started' && !done.has(l.unitId) && new Date(l.time).getTime() <= Date.now() - 700);
    };
    await waitFor(inTheMiddle, 'victim in the middle of a unit', { timeoutMs: 60_000, intervalMs: 20 });
    victim.child.kill('SIGKILL');
    await victim.exited;
    const started = [...victim.output().matchAll(/"unitId":"([^"]+)"[^\n]*"msg":"unit started"/g)].map((m) => m[1]!);
    const finished = new Set([...victim.output().matchAll(/"unitId":"([^"]+)"[^\n]*"msg":"unit done"/g)].map((m) => m[1]!));
    const interrupted = started.filter((id) => !finished.has(id));
    expect(interrupted.length).toBeGreaterThan(0);

    // Restart the scheduler mid-run (SIGKILL: no clean resignation), then start the survivor worker.
    scheduler.child.kill('SIGKILL');
    await scheduler.exited;
    scheduler = fleet.spawn('scheduler-b', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500', TICKFLEET_SCHEDULER_LEADER_TTL_MS: '2000' });
    const survivor = fleet.spawn('worker-survivor', ['worker'], debug);
    await fleet.ready(survivor);

    // Every interrupted unit is picked up again after stall recovery and completed by the survivor.
    await waitFor(
      () =>
        interrupted.every(
          (id) =>
            survivor.output().includes(`"unitId":"${id}"`) &&
            new RegExp(`"unitId":"${id.replace(/[|/]/g, (c) => `\\${c}`)}"[^\\n]*"msg":"unit done"`).test(survivor.output()),
        ),
      'interrupted units finished by the survivor',
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    // All jobs catch up to the last closed candle.
    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          const target = lastClosedOpenTime(Date.now() - 2500, '1m') - 60_000;
          const jobs = await store.jobs.list({ venue: 'binance' });
          return jobs.length === SYMBOLS.length && jobs.every((j) => (j.cursor ?? 0) >= target);
        }),
      'all cursors caught up',
      { timeoutMs: 60_000, intervalMs: 500 },
    );

    for (const s of SYMBOLS) {
      const job = await fleet.withStore((store) => store.jobs.get(`binance:${s}:1m:ohlcv`));
      const stored = await fleet.storedOpenTimes('binance', s, '1m');
      // Cursor consistent: it is the open time of the newest stored candle.
      expect(job!.cursor).toBe(stored[stored.length - 1]);
      const expected = expectedCandles('binance', s, '1m', since, job!.cursor! + 60_000, DEFAULT_SEED).map((c) => c.openTime);
      expect(stored.length).toBe(expected.length);
      expect(stored).toEqual(expected);
    }

    // No unit was enqueued twice: every live unit id (job id + due time) ran at most to one completion.
    const dueTimes = [...survivor.output().matchAll(/"unitId":"(live\|[^"]+)"[^\n]*"msg":"unit done"/g)].map((m) => m[1]!);
    expect(new Set(dueTimes).size).toBe(dueTimes.length);

    await fleet.stopCleanly(survivor);
    await fleet.stopCleanly(scheduler);
  }, 180_000);
});
