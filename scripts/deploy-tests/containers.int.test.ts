/**
 * The image in containers: built from the repository's Dockerfile with podman
 * (scripts/containers/build.sh), then a fleet on one podman network: Redis, the venue
 * emulations, a scheduler, the dashboard and workers, configured only through environment
 * variables, with the SQLite store and sink on a shared volume (podman-fleet.ts says why).
 *
 *   1. every role starts as uid 10001 on a read-only root filesystem and answers /healthz, /readyz
 *   2. `podman stop` of a worker with units in flight: exit 0 within the grace period, the units
 *      returned to the queue and finished by the other workers
 *   3. 1 → 3 → 1 workers during a backfill, one SIGKILLed: every candle stored once, none over the limit
 *   4. the spool outlives the container: sink locked, units spooled, the worker container removed,
 *      a new one started on the same spool volume, the sink back: 0 missing
 *   5. the scheduler and the dashboard stop on `podman stop` with exit 0
 *
 *   NODE_OPTIONS=--experimental-vm-modules pnpm exec jest scripts/deploy-tests/containers.int.test.ts
 */
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { openSink, inspectSpool } from '@tickfleet/sinks';
import { openStore } from '@tickfleet/store';
import { waitFor } from '@tickfleet/testkit';
import { join } from 'node:path';
import { fixture, runTs, type Proc } from '../../packages/sinks/test/fixtures/processes.js';
import { buildImage, podman, PodmanFleet } from './podman-fleet.js';

const DAY = 86_400_000;
const TO = Math.floor(Date.now() / DAY) * DAY - DAY;

describe('the image in containers (podman): roles, stop, SIGKILL, spool volume', () => {
  let fleet: PodmanFleet;
  let built: { image: string; seconds: number; bytes: number };
  const started = Date.now();
  const lockers: Proc[] = [];

  beforeAll(async () => {
    built = await buildImage();
    fleet = new PodmanFleet(built.image);
    await fleet.start();
    await fleet.cli([
      'connectors',
      'upsert',
      'binance',
      '--base-url',
      `http://${fleet.name('mock')}:8080/binance`,
      '--limit',
      '600',
      '--period',
      '10s',
      '--max-inflight',
      '3',
    ]);
  }, 35 * 60_000);
  afterAll(async () => {
    for (const l of lockers) l.child.kill('SIGTERM');
    await fleet?.stop();
    process.stdout.write(
      `\ncontainers: image ${built?.image} ${Math.round((built?.bytes ?? 0) / 1e6)} MB, build ${built?.seconds} s, whole file ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  }, 180_000);

  const patchLatency = (latencyMs: number) =>
    fetch(`${fleet.mockUrl}/_mock/scenario`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ venues: { binance: { latencyMs } } }),
    });
  const get = async (hostPort: string, path: string): Promise<number> => (await fetch(`http://${hostPort}${path}`).catch(() => ({ status: 0 }))).status;
  const startWorker = (slot: string, spool = `${fleet.prefix}-spool-${slot}`) => fleet.run(`worker-${slot}`, fleet.image, ['worker'], { ports: [9464], spool });
  const healthy = async (short: string, port: number) => {
    const at = await fleet.hostPort(short, port);
    await waitFor(async () => (await get(at, '/healthz')) === 200 && (await get(at, '/readyz')) === 200, `${short} /healthz and /readyz 200`, {
      timeoutMs: 90_000,
      intervalMs: 500,
    }).catch(async (err: Error) => {
      throw new Error(`${err.message}; its logs:\n${(await fleet.logs(short)).slice(-3000)}`);
    });
  };
  const backfill = async (symbol: string, days: number): Promise<string> =>
    (
      JSON.parse(
        await fleet.cli([
          'backfill',
          'binance',
          symbol,
          '--timeframe',
          '1m',
          '--from',
          new Date(TO - days * DAY).toISOString(),
          '--to',
          new Date(TO).toISOString(),
          '--json',
        ]),
      ) as { id: string }
    ).id;
  const withStore = async <T>(fn: (s: Awaited<ReturnType<typeof openStore>>) => Promise<T>): Promise<T> => {
    const store = await openStore(`sqlite://${join(fleet.dataDir, 'state.db')}`);
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  const backfillState = (id: string) => withStore(async (s) => (await s.backfills.get(id))!);
  const backfillDone = (id: string, timeoutMs = 240_000) =>
    waitFor(async () => ((await backfillState(id)).status === 'done' ? true : false), `backfill ${id} done`, { timeoutMs, intervalMs: 1000 });
  /** Stored 1m open times of one symbol in [from, TO) against the emulation's candles. */
  const candleReport = async (symbol: string, days: number) => {
    const from = TO - days * DAY;
    const sink = await openSink(`sqlite://${join(fleet.dataDir, 'data.db')}`);
    const stored: number[] = [];
    try {
      for await (const c of sink.reader!.streamCandles({ venue: 'binance', symbol, timeframe: '1m' }))
        if (c.openTime >= from && c.openTime < TO) stored.push(c.openTime);
    } finally {
      await sink.close();
    }
    const expected = new Set(expectedCandles('binance', symbol, '1m', from, TO, DEFAULT_SEED).map((c) => c.openTime));
    const seen = new Set(stored);
    return { expected: expected.size, stored: stored.length, duplicates: stored.length - seen.size, missing: [...expected].filter((t) => !seen.has(t)).length };
  };
  const overLimit = async (): Promise<number> => {
    const stats = (await (await fetch(`${fleet.mockUrl}/_mock/stats`)).json()) as { venues: { binance: { overLimitRequests: number } } };
    return stats.venues.binance.overLimitRequests;
  };

  it('runs every role as uid 10001 on a read-only root filesystem, answering /healthz and /readyz', async () => {
    await fleet.run('scheduler', fleet.image, ['scheduler'], { ports: [9464] });
    await fleet.run('dashboard', fleet.image, ['dashboard', '--port', '3000'], { ports: [3000] });
    await startWorker('0');
    await healthy('scheduler', 9464);
    await healthy('dashboard', 3000);
    await healthy('worker-0', 9464);
    // The image's own user, and /app owned by root: not writable even without --read-only.
    const probe = await podman([
      'run',
      '--rm',
      '--entrypoint',
      'node',
      fleet.image,
      '-e',
      "let w='written';try{require('fs').writeFileSync('/app/apps/probe','x')}catch(e){w=e.code};console.log(process.getuid(),require('fs').statSync('/app').uid,w)",
    ]);
    expect(probe.trim()).toBe('10001 0 EACCES');
    expect(await podman(['exec', fleet.name('worker-0'), 'node', '-e', 'console.log(process.getuid())'])).toBe('10001\n');
  }, 300_000);

  it('stops a worker within the grace period on `podman stop`, its in-flight units returned and finished by others', async () => {
    await patchLatency(30_000);
    const id = await backfill('ETH/USDT', 3);
    await waitFor(async () => /"msg":"unit started"/.test(await fleet.logs('worker-0')), 'worker-0 running a unit', { timeoutMs: 60_000, intervalMs: 500 });
    const stopAt = Date.now();
    // GRACE_MS 5 s, hard limit grace + 10 s: `podman stop -t 20` never needs its SIGKILL.
    await podman(['stop', '-t', '20', fleet.name('worker-0')]);
    const stopMs = Date.now() - stopAt;
    const logs = await fleet.logs('worker-0');
    expect(await fleet.state('worker-0')).toEqual({ running: false, exitCode: 0 });
    expect(stopMs).toBeLessThan(20_000);
    expect((logs.match(/unit returned to the queue on shutdown/g) ?? []).length).toBeGreaterThan(0);
    await fleet.remove('worker-0');

    await patchLatency(0);
    await startWorker('1');
    await backfillDone(id);
    const bf = await backfillState(id);
    expect({ done: bf.unitsDone, failed: bf.unitsFailed }).toEqual({ done: bf.unitsTotal, failed: 0 });
    expect(await candleReport('ETH/USDT', 3)).toMatchObject({ expected: 3 * 1440, stored: 3 * 1440, missing: 0, duplicates: 0 });
  }, 400_000);

  it('scales 1 → 3 → 1 workers and SIGKILLs one mid-backfill: every candle stored once, none over the limit', async () => {
    // Slow answers keep units in flight and owed until the scale-down is over, however long a
    // container takes to start on a busy machine.
    await patchLatency(20_000);
    const symbols = ['BTC/USDT', 'BNB/USDT'];
    const ids = await Promise.all(symbols.map((s) => backfill(s, 10)));
    const left = async () => {
      const all = await Promise.all(ids.map(backfillState));
      return all.reduce((n, b) => n + b.unitsTotal - b.unitsDone, 0);
    };
    // 1 → 3 while worker-1 runs the backfill alone.
    await waitFor(async () => /"msg":"unit started"/.test(await fleet.logs('worker-1')), 'worker-1 running a unit', { timeoutMs: 120_000, intervalMs: 500 });
    await startWorker('2');
    await startWorker('3');
    await waitFor(async () => /"msg":"unit started"/.test(await fleet.logs('worker-2')), 'worker-2 running a unit', { timeoutMs: 120_000, intervalMs: 500 });
    await podman(['kill', '-s', 'KILL', fleet.name('worker-2')]);
    await fleet.remove('worker-2');
    await startWorker('2b', `${fleet.prefix}-spool-2`);
    // 3 → 1 with chunks still owed: worker-1 and worker-3 stopped as a scale-down stops pods.
    const leftAtScaleDown = await left();
    for (const w of ['worker-1', 'worker-3']) {
      await podman(['stop', '-t', '20', fleet.name(w)]);
      expect((await fleet.state(w)).exitCode).toBe(0);
      await fleet.remove(w);
    }
    await patchLatency(0);
    for (const id of ids) await backfillDone(id);
    expect(leftAtScaleDown).toBeGreaterThan(0);
    for (const id of ids) {
      const bf = await backfillState(id);
      expect({ done: bf.unitsDone, failed: bf.unitsFailed }).toEqual({ done: bf.unitsTotal, failed: 0 });
    }
    for (const s of symbols) expect(await candleReport(s, 10)).toMatchObject({ expected: 10 * 1440, stored: 10 * 1440, missing: 0, duplicates: 0 });
    expect(await overLimit()).toBe(0);
  }, 500_000);

  it('keeps what a worker spooled in its volume: removed during a sink outage, replayed by the next container', async () => {
    const spoolVolume = `${fleet.prefix}-spool-2`;
    const spoolDir = join(await fleet.volumeDir(spoolVolume), 'worker-0');
    // The sink's write lock held from this machine (a foreign transaction): every write fails, records spool.
    const locker = runTs(fixture('locker.ts'), [join(fleet.dataDir, 'data.db')]);
    lockers.push(locker);
    await waitFor(() => locker.lines.includes('locked') || locker.child.exitCode !== null, 'sink locked', { timeoutMs: 60_000 });
    expect(locker.lines).toContain('locked');

    const id = await backfill('XRP/USDT', 2);
    await backfillDone(id);
    const spooled = inspectSpool(spoolDir);
    expect(spooled.records).toBeGreaterThan(0);
    expect((await candleReport('XRP/USDT', 2)).stored).toBe(0);

    // The pod deleted: its container stopped and removed; the spool volume is all that is left.
    await podman(['stop', '-t', '20', fleet.name('worker-2b')]);
    await fleet.remove('worker-2b');
    await startWorker('2c', spoolVolume);
    await healthy('worker-2c', 9464);
    locker.child.kill('SIGTERM');
    await locker.exited;
    await waitFor(async () => (await candleReport('XRP/USDT', 2)).stored >= 2 * 1440, 'the spool replayed into the sink', {
      timeoutMs: 180_000,
      intervalMs: 1000,
    });
    expect(await candleReport('XRP/USDT', 2)).toMatchObject({ expected: 2 * 1440, stored: 2 * 1440, missing: 0, duplicates: 0 });
    await waitFor(() => inspectSpool(spoolDir).records === 0, 'the spool empty after replay', { timeoutMs: 60_000, intervalMs: 1000 });
    process.stdout.write(`\ncontainers spool: ${spooled.records} records (${spooled.bytes} bytes) spooled, replayed by the next container\n`);
  }, 500_000);

  it('stops the scheduler and the dashboard on `podman stop` with exit 0, inside the stop timeout', async () => {
    for (const role of ['scheduler', 'dashboard']) {
      const at = Date.now();
      await podman(['stop', '-t', '30', fleet.name(role)]);
      expect({ role, ...(await fleet.state(role)), inTime: Date.now() - at < 30_000 }).toEqual({ role, running: false, exitCode: 0, inTime: true });
    }
  }, 120_000);
});
