import { alignDown } from '@tickfleet/core';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type CandleReport, type FleetProcess } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const MIN = 60_000;
const SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'BNB/USDT', 'XRP/USDT'];
const DAYS = 30;
const LIVE_SYMBOL = 'SOL/USDT';
const LIVE_JOB = `binance:${LIVE_SYMBOL}:1m:ohlcv`;
const WORKERS = 3;
/**
 * Two minutes of kills; the backfill below (176 chunks at 2 s each, 3 in flight, plus what the
 * kills cost) lasts at least as long, so kills land on it throughout. Once the kills end the
 * latency goes, and the rest of the backfill runs at full speed.
 */
const KILL_WINDOW_MS = 120_000;
const sec = (ms: number): string => `${Math.round(ms / 1000)} s`;

/**
 * Chaos: one of three workers is SIGKILLed every 5-10 s (and a replacement started at once) while
 * a multi-day backfill of four symbols and a live job run. Killed units are re-run by BullMQ's
 * stalled-unit recovery — a chunk may run two or three times — or, once BullMQ gives up on a unit
 * stalled too often, re-created by the scheduler from the chunk the store still owes. The run ends
 * comparing the sink with the emulation's `expectedCandles` and its `/_mock/stats` counters.
 */
describe('chaos: worker SIGKILL every 5-10 s across 3 workers during a multi-day backfill', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 2000 } } });
  });
  afterAll(() => fleet.stop());

  it('stores every candle exactly once, each backfill done with every chunk counted once', async () => {
    const started = Date.now();
    await fleet.upsertConnector('binance', '--limit', '600', '--period', '10s', '--max-inflight', String(WORKERS));
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const from = to - DAYS * DAY;
    const liveSince = alignDown(Date.now() - 6 * 3_600_000, '1m');
    // The live job straight into the store (what `jobs add` stores): one CLI process less.
    await fleet.withStore((store) => store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: LIVE_SYMBOL, timeframe: '1m', since: liveSince }));

    // The scheduler and the workers boot side by side (the workers find the connector by polling).
    // The backfills are created once they are up, as before: a scheduler whose first repair pass
    // runs while a backfill's chunks are stored but not yet queued re-creates their units (132 in
    // one run), which would blur the re-created count this experiment reports.
    const scheduler = fleet.spawnScheduler();
    let generation = 0;
    const spawnWorker = (slot: number): FleetProcess => fleet.spawn(`worker-${slot}.${generation++}`, ['worker'], { LOG_LEVEL: 'debug' });
    const workers: FleetProcess[] = Array.from({ length: WORKERS }, (_, i) => spawnWorker(i));
    const everyWorker: FleetProcess[] = [...workers];
    await fleet.ready(scheduler, 'scheduler started');
    for (const w of workers) await fleet.ready(w);
    // Four CLI processes at once: the kills start when all four backfills exist.
    const backfillIds = await Promise.all(
      SYMBOLS.map(async (s) => (JSON.parse(await fleet.backfill('binance', s, '1m', from, to, '--json')) as { id: string }).id),
    );
    const backfills = () => fleet.withStore((store) => Promise.all(backfillIds.map(async (id) => (await store.backfills.get(id))!)));
    const allDone = async (): Promise<boolean> => (await backfills()).every((b) => b.status === 'done');

    // The kill loop: a random worker every 5-10 s, replaced at once, until the window ends or the
    // backfill is done.
    let kills = 0;
    let killedWithBackfillLeft = 0;
    const killsStartedAt = Date.now();
    const killUntil = killsStartedAt + KILL_WINDOW_MS;
    while (Date.now() < killUntil) {
      await new Promise((r) => setTimeout(r, 5000 + Math.random() * 5000));
      const backfillLeft = !(await allDone());
      const slot = Math.floor(Math.random() * WORKERS);
      const victim = workers[slot]!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      kills += 1;
      if (backfillLeft) killedWithBackfillLeft += 1;
      workers[slot] = spawnWorker(slot);
      everyWorker.push(workers[slot]!);
      if (!backfillLeft) break;
    }
    const killsEndedAt = Date.now();
    // The latency only stretched the backfill over the kill window: what is left runs at full speed.
    fleet.mock.patchScenario({ venues: { binance: { latencyMs: 0 } } });
    for (const w of workers) await fleet.ready(w);

    await waitFor(allDone, 'every backfill done after the kills', { timeoutMs: 240_000, intervalMs: 500 });
    const backfillDoneAt = Date.now();
    const gapFill = await fleet.settleLiveJob(LIVE_JOB);
    const settledAt = Date.now();

    const final = await backfills();
    const reports: Record<string, CandleReport> = {};
    for (const s of SYMBOLS) reports[s] = await fleet.candleReport('binance', s, '1m', from, to);
    const liveJob = await fleet.withStore((store) => store.jobs.get(LIVE_JOB));
    const live = await fleet.candleReport('binance', LIVE_SYMBOL, '1m', liveSince, liveJob!.cursor! + MIN);
    const stats = await fleet.mockStats('binance');
    // Evidence the kills hit the backfill: chunks whose unit started more than once.
    const starts = new Map<string, number>();
    for (const w of everyWorker) {
      for (const m of w.output().matchAll(/"unitId":"(bf\|[^"]+)"[^\n]*"msg":"unit started"/g)) starts.set(m[1]!, (starts.get(m[1]!) ?? 0) + 1);
    }
    const rerunChunks = [...starts.values()].filter((n) => n > 1).length;
    const recreated = [...scheduler.output().matchAll(/"recreatedUnits":(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);

    expect(killedWithBackfillLeft).toBeGreaterThanOrEqual(3);
    for (const b of final) expect({ status: b.status, done: b.unitsDone, failed: b.unitsFailed }).toEqual({ status: 'done', done: b.unitsTotal, failed: 0 });
    for (const s of SYMBOLS) expect(reports[s]).toMatchObject({ expected: DAYS * 1440, stored: DAYS * 1440, missing: 0, duplicates: 0, unexpected: 0 });
    expect(live).toMatchObject({ missing: 0, duplicates: 0, unexpected: 0 });
    expect(liveJob!.cursor).toBe(live.newest);
    expect(stats.overLimitRequests).toBe(0);

    const chunks = final.reduce((n, b) => n + b.unitsTotal, 0);
    process.stdout.write(
      `\nworker-kills: ${kills} SIGKILLs over ${Math.round((killsEndedAt - killsStartedAt) / 1000)} s (${killedWithBackfillLeft} during the backfill) across ${WORKERS} workers; ` +
        `${chunks} chunks, ${rerunChunks} started more than once, ${recreated} re-created by the scheduler, each counted once (done ${chunks}/${chunks}); ` +
        `stored ${SYMBOLS.length * DAYS * 1440 + live.stored}/${SYMBOLS.length * DAYS * 1440 + live.expected} candles (missing 0, duplicates 0); gap backfill ${gapFill ? 'ran' : 'not needed'}; ` +
        `over-limit ${stats.overLimitRequests} of ${stats.requests} requests; live cursor = newest stored; ` +
        `wall ${Math.round((Date.now() - started) / 1000)} s (setup ${sec(killsStartedAt - started)}, backfill done ${sec(backfillDoneAt - killsEndedAt)} after the kills, ` +
        `live job settled ${sec(settledAt - backfillDoneAt)} later, checks ${sec(Date.now() - settledAt)})\n`,
    );
    for (const w of workers) await fleet.stopCleanly(w);
    await fleet.stopCleanly(scheduler);
  }, 600_000);
});
