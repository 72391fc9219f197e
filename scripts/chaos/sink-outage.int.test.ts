/**
 * Chaos: the sink goes away under a running backfill, in three ways, then comes back.
 *
 *   A  collecting normally (2 real worker processes, a scheduler, the Binance emulation)
 *   B  the SQLite sink file locked by another process (BEGIN EXCLUSIVE): records spool
 *   C  the sink's disk full (a small tmpfs filled to the last byte): records still spool
 *   D  the spool's disk full too: worker-a applies `drop_all`, worker-b `block` (3 s, then the
 *      unit goes back to the queue); both counted, no attempt burned, nothing spooled corrupted;
 *      a worker started now exits non-zero with one line naming its spool directory
 *   E  both disks freed (and the connector's limit raised): the spools replay, the units come
 *      back, the backfill ends
 *
 * Ground truth at the end: the sink equals `expectedCandles` from the backfill start to the live
 * cursor (0 missing, 0 duplicated), the cursor is the newest stored candle, no unit failed, no gap
 * is open, the emulation saw no over-limit request.
 *
 * Needs root (it mounts two tmpfs); skipped with a message otherwise.
 *   NODE_OPTIONS=--experimental-vm-modules pnpm exec jest scripts/chaos/sink-outage.int.test.ts
 */
import { join } from 'node:path';
import { alignDown, lastClosedOpenTime } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { freePort, isRunning, waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import { fixture, runTs, type Proc } from '../../packages/sinks/test/fixtures/processes.js';
import { mountTmpfs, tmpfsUnsupported, type Tmpfs } from '../../packages/sinks/test/fixtures/tmpfs.js';
import { metricSum, scrape, spoolOnDisk, storedOpenTimes } from './fixtures/sink-chaos.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const SYMBOL = 'BTC/USDT';
const JOB = 'binance:BTC/USDT:1m:ohlcv';
const iso = (ms: number): string => new Date(ms).toISOString();

const unsupported = tmpfsUnsupported();
if (unsupported) process.stderr.write(`SKIPPED sink-outage chaos experiment: ${unsupported}\n`);
const describeChaos = unsupported ? describe.skip : describe;

interface WorkerFigures {
  spoolBytesPeak: number;
  spoolAppended: number;
  spoolReplayed: number;
  spoolDropped: number;
  unitsSpoolFull: number;
  unitsFailed: number;
  unitsOk: number;
}

describeChaos('chaos: sink outage (locked file, full sink disk, full spool disk), then recovery', () => {
  let fleet: FleetHarness;
  let sinkFs: Tmpfs;
  let spoolFs: Tmpfs;
  const procs: Proc[] = [];
  beforeAll(async () => {
    sinkFs = mountTmpfs(64 * 1024 * 1024, 'chaos-sink-');
    spoolFs = mountTmpfs(32 * 1024 * 1024, 'chaos-spool-');
    fleet = await FleetHarness.start({});
  });
  afterAll(async () => {
    for (const p of procs) if (isRunning(p.child)) p.child.kill('SIGKILL');
    await fleet?.stop();
    sinkFs?.unmount();
    spoolFs?.unmount();
  });

  it('spools through a locked and a full sink, applies onFull on a full spool, and ends complete', async () => {
    const startedAt = Date.now();
    const phases: Array<[string, number]> = [];
    const mark = (name: string): void => void phases.push([name, Math.round((Date.now() - startedAt) / 100) / 10]);
    const sinkPath = join(sinkFs.path, 'data.db');
    const sinkUrl = `sqlite://${sinkPath}`;
    const spoolDir = join(spoolFs.path, 'spool');
    // Long unit locks: a worker whose sink is locked spends up to busy_timeout (2 s) per write in
    // a synchronous SQLite call, which must not make BullMQ take its units for stalled.
    const env = { TICKFLEET_SINK_URL: sinkUrl, TICKFLEET_SPOOL_DIR: spoolDir, TICKFLEET_UNIT_LOCK_MS: '30000', TICKFLEET_STALLED_INTERVAL_MS: '10000' };

    // 20 weight / 10 s (a page of 1000 candles weighs 2): at most about one unit a second, so a
    // 30-day backfill (44 units) is still running when the spool's disk fills (~30 s in).
    await fleet.upsertConnector('binance', '--limit', '20', '--period', '10s', '--max-inflight', '4');
    const since = alignDown(Date.now() - 6 * HOUR, '1m');
    const backfillFrom = since - 30 * DAY;
    // The live job straight into the store (what `jobs add` stores): one CLI process less.
    await fleet.withStore((store) => store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: SYMBOL, timeframe: '1m', since }));
    const portA = await freePort();
    const portB = await freePort();
    // The scheduler and the backfill's CLI process start while the workers do.
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { ...env, TICKFLEET_SCHEDULER_TICK_MS: '500' });
    const created = fleet.ok('backfill', 'binance', SYMBOL, '--timeframe', '1m', '--from', iso(backfillFrom), '--to', iso(since), '--json');
    // Awaited below; a failure while the workers start must not go unhandled meanwhile.
    created.catch(() => undefined);
    // Started one after the other, so worker-a holds spool slot worker-0 and worker-b worker-1.
    const a = fleet.spawn('worker-a', ['worker'], { ...env, TICKFLEET_HEALTH_PORT: String(portA), TICKFLEET_SPOOL_ON_FULL: 'drop_all' });
    await fleet.ready(a);
    const b = fleet.spawn('worker-b', ['worker'], {
      ...env,
      TICKFLEET_HEALTH_PORT: String(portB),
      TICKFLEET_SPOOL_ON_FULL: 'block',
      TICKFLEET_SPOOL_BLOCK_TIMEOUT_MS: '3000',
    });
    await fleet.ready(b);
    await fleet.ready(scheduler, 'scheduler started');
    const bf = JSON.parse(await created) as { id: string; unitsTotal: number };

    // Peak spool bytes as each worker's /metrics reports them (part of the proof that they move).
    const peak = { a: 0, b: 0 };
    const sampler = setInterval(() => {
      void Promise.all([scrape(portA), scrape(portB)]).then(
        ([ma, mb]) => {
          peak.a = Math.max(peak.a, metricSum(ma, 'tickfleet_spool_bytes'));
          peak.b = Math.max(peak.b, metricSum(mb, 'tickfleet_spool_bytes'));
        },
        () => undefined,
      );
    }, 300);
    const spoolMetricBytes = async (): Promise<number> => {
      const [ma, mb] = await Promise.all([scrape(portA), scrape(portB)]);
      return metricSum(ma, 'tickfleet_spool_bytes') + metricSum(mb, 'tickfleet_spool_bytes');
    };

    let spooledAtFull = spoolOnDisk(spoolDir, 2);
    let lateLine: string[] = [];
    try {
      mark('A collecting');
      await waitFor(async () => (await storedOpenTimes(sinkUrl, 'binance', SYMBOL)).length >= 2000, 'collection under way', {
        timeoutMs: 90_000,
        intervalMs: 500,
      });

      // B: the sink file locked by another process.
      const locker = runTs(fixture('locker.ts'), [sinkPath]);
      procs.push(locker);
      await waitFor(() => locker.lines.includes('locked') || locker.child.exitCode !== null, 'sink locked');
      expect(locker.lines).toContain('locked');
      mark('B sink locked');
      await waitFor(async () => (await spoolMetricBytes()) > 300_000, 'records spooling while the sink is locked (workers /metrics)', {
        timeoutMs: 90_000,
        intervalMs: 300,
      });
      const spooledInB = spoolOnDisk(spoolDir, 2);

      // C: the sink's disk full (filled before the lock goes, so no write slips through between).
      sinkFs.fill(0);
      locker.child.kill('SIGTERM');
      await locker.exited;
      mark('C sink disk full');
      await waitFor(() => spoolOnDisk(spoolDir, 2).bytes > spooledInB.bytes + 300_000, 'records spooling while the sink disk is full', {
        timeoutMs: 90_000,
        intervalMs: 300,
      });
      const sinkState = metricSum(await scrape(portA), 'tickfleet_sink_state') + metricSum(await scrape(portB), 'tickfleet_sink_state');
      expect(sinkState).toBeGreaterThan(0);

      // D: the spool's disk full as well.
      spoolFs.fill(0);
      mark('D spool disk full');
      spooledAtFull = spoolOnDisk(spoolDir, 2);
      // A worker started now cannot write its spool lock: one line naming the directory, exit 1.
      const late = fleet.spawn('worker-late', ['worker'], { ...env, TICKFLEET_HEALTH_PORT: '0' });
      const lateCode = await Promise.race([late.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 60_000))]);
      expect(lateCode).toBe(1);
      const lateOut = late.output();
      expect(lateOut).toContain(join(spoolDir, 'worker-2'));
      expect(lateOut).toMatch(/no space left on its disk \(ENOSPC/);
      expect(lateOut).not.toMatch(/^\s+at /m);
      lateLine = lateOut.split('\n').filter((l) => l.includes('ENOSPC'));
      expect(lateLine).toHaveLength(1);

      // Each worker's policy applies and is counted; units go back to the queue.
      await waitFor(
        async () => {
          const [ma, mb] = await Promise.all([scrape(portA), scrape(portB)]);
          return (
            metricSum(ma, 'tickfleet_spool_dropped_total') > 0 &&
            metricSum(ma, 'tickfleet_units_total', { outcome: 'spool_full' }) > 0 &&
            metricSum(mb, 'tickfleet_units_total', { outcome: 'spool_full' }) > 0
          );
        },
        'drop_all drops and block returns units while the spool disk is full',
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      // Nothing already spooled was corrupted: every frame on the full disk is complete, none lost.
      // (A refused write is cut back at once; a read racing it may see its bytes for a moment.)
      const intact = await waitFor(
        () => {
          const s = spoolOnDisk(spoolDir, 2);
          return s.tornBytes === 0 ? s : undefined;
        },
        'no torn frame in the spools',
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      expect(intact.records).toBeGreaterThanOrEqual(spooledAtFull.records);
      mark('D policies observed');

      // E: space comes back, and the connector's limit goes up to a tenth of the emulation's 6000
      // per minute: the rest of the backfill need not crawl at the pace that kept it running
      // through the outages (about 40 s more), and the venue still sees no over-limit request.
      spoolFs.free();
      sinkFs.free();
      mark('E disks freed');
      await fleet.upsertConnector('binance', '--limit', '100', '--period', '10s', '--max-inflight', '4');
      let state: unknown;
      await waitFor(
        async () => {
          const [backfill, job] = await fleet.withStore((s) => Promise.all([s.backfills.get(bf.id), s.jobs.get(JOB)]));
          const target = lastClosedOpenTime(Date.now() - 2500, '1m') - MIN;
          const spool = spoolOnDisk(spoolDir, 2);
          const metricBytes = await spoolMetricBytes();
          state = { backfill, cursor: job?.cursor, target, spool, metricBytes };
          return backfill?.status === 'done' && (job?.cursor ?? 0) >= target && spool.bytes === 0 && metricBytes === 0;
        },
        'backfill done, live job caught up, spools replayed',
        { timeoutMs: 150_000, intervalMs: 1000 },
      ).catch((err: Error) => {
        const tail = (out: string): string => out.split('\n').slice(-15).join('\n');
        throw new Error(`${err.message}\nlast state: ${JSON.stringify(state)}\nworker-a:\n${tail(a.output())}\nworker-b:\n${tail(b.output())}`);
      });
      mark('E recovered');
    } finally {
      clearInterval(sampler);
    }

    const figures = async (port: number): Promise<WorkerFigures> => {
      const m = await scrape(port);
      return {
        spoolBytesPeak: 0,
        spoolAppended: metricSum(m, 'tickfleet_spool_appended_total'),
        spoolReplayed: metricSum(m, 'tickfleet_spool_replayed_total'),
        spoolDropped: metricSum(m, 'tickfleet_spool_dropped_total'),
        unitsSpoolFull: metricSum(m, 'tickfleet_units_total', { outcome: 'spool_full' }),
        unitsFailed: metricSum(m, 'tickfleet_units_total', { outcome: 'failed' }),
        unitsOk: metricSum(m, 'tickfleet_units_total', { outcome: 'ok' }),
      };
    };
    const fa = { ...(await figures(portA)), spoolBytesPeak: peak.a };
    const fb = { ...(await figures(portB)), spoolBytesPeak: peak.b };

    // Quiesce before reading the cursor: no live unit may move it between the two reads.
    await fleet.stopCleanly(scheduler);
    await fleet.stopCleanly(a);
    await fleet.stopCleanly(b);

    // The spool metrics moved in real workers, and replay took back what was spooled.
    expect(fa.spoolBytesPeak + fb.spoolBytesPeak).toBeGreaterThan(300_000);
    expect(fa.spoolAppended + fb.spoolAppended).toBeGreaterThan(0);
    expect(fa.spoolReplayed + fb.spoolReplayed).toBeGreaterThanOrEqual(fa.spoolAppended + fb.spoolAppended);
    // No unit failed (for lack of disk or anything else): spool-full units went back unburnt.
    expect(fa.unitsFailed + fb.unitsFailed).toBe(0);
    expect(fa.unitsSpoolFull).toBeGreaterThan(0);
    expect(fb.unitsSpoolFull).toBeGreaterThan(0);
    expect(fa.spoolDropped).toBeGreaterThan(0);

    const stored = await storedOpenTimes(sinkUrl, 'binance', SYMBOL);
    const job = await fleet.withStore((s) => s.jobs.get(JOB));
    expect(job!.cursor).toBe(stored[stored.length - 1]);
    const expected = expectedCandles('binance', SYMBOL, '1m', backfillFrom, job!.cursor! + MIN, DEFAULT_SEED).map((c) => c.openTime);
    expect(new Set(stored).size).toBe(stored.length);
    expect(stored.length).toBe(expected.length);
    expect(stored).toEqual(expected);
    expect(await fleet.withStore((s) => s.gaps.list({ jobId: JOB, open: true }))).toEqual([]);
    const backfill = await fleet.withStore((s) => s.backfills.get(bf.id));
    expect(backfill).toMatchObject({ status: 'done' });
    const stats = fleet.mock.stats().venues.binance!;
    expect(stats.overLimitRequests).toBe(0);

    const report = {
      wallSeconds: Math.round((Date.now() - startedAt) / 1000),
      phases,
      backfillUnits: bf.unitsTotal,
      storedCandles: stored.length,
      expectedCandles: expected.length,
      spoolAtSpoolDiskFull: spooledAtFull,
      lateWorker: lateLine[0],
      workerA_dropAll: fa,
      workerB_block: fb,
      venueRequests: stats.requests,
      overLimitRequests: stats.overLimitRequests,
    };
    process.stdout.write(`sink-outage chaos figures: ${JSON.stringify(report)}\n`);
  }, 240_000);
});
