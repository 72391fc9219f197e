import { writeFileSync } from 'node:fs';
import { tempDir, freePort, waitFor, type TempDir } from '@tickfleet/testkit';
import { listSegments, openSink, type Sink } from './index.js';
import { fixture, pushed, runTs, type Proc } from '../test/fixtures/processes.js';

/** Exact-set check: the sink holds trades 0..total-1, each once. */
async function expectExactly(sink: Sink, total: number): Promise<void> {
  const ids: string[] = [];
  for await (const e of sink.reader!.streamEnvelopes({ venue: 'binance', channel: 'trades' })) ids.push(e.envelope.payload.tradeId as string);
  expect(ids.length).toBe(total);
  expect(new Set(ids)).toEqual(new Set(Array.from({ length: total }, (_, i) => String(i))));
}

const spoolBytes = (dir: string): number => listSegments(dir).reduce((n, s) => n + s.bytes, 0);

/** Whether the producer stopped at its `--pause-at` count (it waits there for its `--resume` file). */
const paused = (p: Proc): boolean => p.lines.some((l) => l.startsWith('paused '));

async function finished(p: Proc): Promise<void> {
  const r = await p.exited;
  if (r.code !== 0) throw new Error(`producer exited ${r.code ?? r.signal}: ${p.stderr()}`);
  expect(p.lines).toContain('drained');
}

describe('outage end to end (real processes)', () => {
  let dir: TempDir;
  const procs: Proc[] = [];
  beforeEach(() => (dir = tempDir('outage-')));
  afterEach(() => {
    for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    dir.remove();
  });
  const start = (file: string, args: string[]): Proc => {
    const p = runTs(fixture(file), args);
    procs.push(p);
    return p;
  };
  /** A producer's arguments: `total` trades into `sinkUrl`, spool and cursor in the test's directory. */
  const producerArgs = (sinkUrl: string, total: number): string[] => [
    '--sink',
    sinkUrl,
    '--spool',
    dir.file('spool'),
    '--cursor',
    dir.file('cursor'),
    '--total',
    String(total),
  ];
  /** A producer that stops after `pauseAt` records until `resume()`: the test takes the sink away in between. */
  const startPaused = (args: string[], pauseAt: number): { producer: Proc; resume: () => void } => {
    const resumeFile = dir.file('resume');
    const producer = start('producer.ts', [...args, '--interval-ms', '5', '--pause-at', String(pauseAt), '--resume', resumeFile]);
    return { producer, resume: () => writeFileSync(resumeFile, '') };
  };

  it('SQLite locked by another process: the spool grows, the lock goes, replay drains, exact set', async () => {
    const db = dir.file('data.db');
    const spool = dir.file('spool');
    // The producer stops after 200 records until the locker process (slow to start on a busy machine)
    // holds the lock, so the rest meet the outage: the spool must grow by more than a segment.
    const total = 3000;
    const { producer, resume } = startPaused(producerArgs(`sqlite://${db}`, total), 200);
    await waitFor(() => paused(producer), 'producer under way (paused at 200)');
    const locker = start('locker.ts', [db]);
    await waitFor(() => locker.lines.includes('locked'), 'lock held');
    resume();
    await waitFor(() => spoolBytes(spool) > 20_000 && listSegments(spool).length >= 2, 'spool growing during the outage', { timeoutMs: 60_000 });
    expect(producer.lines.some((l) => / (unavailable|degraded) [1-9]/.test(l))).toBe(true);
    locker.child.kill('SIGTERM');
    await locker.exited;
    await finished(producer);
    expect(spoolBytes(spool)).toBe(0);
    const sink = await openSink(`sqlite://${db}`);
    await expectExactly(sink, total);
    await sink.close();
  }, 120_000);

  it('several local processes write one SQLite file concurrently (WAL, busy timeout): exact set', async () => {
    const db = dir.file('data.db');
    const total = 1000;
    // Both push the same records: each is stored once, whichever process wins.
    const a = start('producer.ts', [
      '--sink',
      `sqlite://${db}`,
      '--spool',
      dir.file('spool-a'),
      '--cursor',
      dir.file('cursor-a'),
      '--total',
      String(total),
      '--interval-ms',
      '1',
    ]);
    const b = start('producer.ts', [
      '--sink',
      `sqlite://${db}`,
      '--spool',
      dir.file('spool-b'),
      '--cursor',
      dir.file('cursor-b'),
      '--total',
      String(total),
      '--interval-ms',
      '1',
    ]);
    await Promise.all([finished(a), finished(b)]);
    const sink = await openSink(`sqlite://${db}`);
    await expectExactly(sink, total);
    await sink.close();
  });

  it('SIGKILL during spool appends: restart recovers complete records, replay drains, exact set', async () => {
    const db = dir.file('data.db');
    const spool = dir.file('spool');
    const total = 3000;
    const args = [...producerArgs(`sqlite://${db}`, total), '--pad', '2000'];
    // The first producer stops after 50 records until the lock is held (the locker is slow to start on a
    // busy machine); then at 5 ms between batches it is still seconds from its last record when killed.
    const { producer: first, resume } = startPaused(args, 50);
    await waitFor(() => paused(first), 'producer under way (paused at 50)');
    const locker = start('locker.ts', [db]);
    await waitFor(() => locker.lines.includes('locked'), 'lock held');
    resume();
    // Everything now goes to the spool; kill the producer while it appends.
    await waitFor(() => spoolBytes(spool) > 100_000, 'spooling');
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const killedAt = pushed(first);
    expect(killedAt).toBeLessThan(total);

    const second = start('producer.ts', [...args, '--interval-ms', '2']);
    await waitFor(() => second.lines.find((l) => l.startsWith('recovered ')), 'spool recovered');
    const [, truncated, kept] = second.lines
      .find((l) => l.startsWith('recovered '))!
      .split(' ')
      .map(Number);
    expect(truncated).toBeGreaterThanOrEqual(0);
    expect(kept).toBeGreaterThanOrEqual(0);
    await waitFor(() => pushed(second) >= Math.min(total, killedAt + 100), 'restarted producer spooling');
    locker.child.kill('SIGTERM');
    await locker.exited;
    await finished(second);
    const sink = await openSink(`sqlite://${db}`);
    await expectExactly(sink, total);
    await sink.close();
  });

  it('MongoDB server stopped (SIGSTOP) and resumed (SIGCONT): spool grows, then drains, exact set', async () => {
    const port = await freePort();
    const mongo = start('../../../mongo-wire/src/bin.ts', ['--port', String(port)]);
    await waitFor(() => mongo.lines.length > 0, 'mongo-wire listening');
    const url = `mongodb://127.0.0.1:${port}/outage`;
    const spool = dir.file('spool');
    const total = 1500;
    // The producer stops after 200 records until the server is stopped, so the rest meet the outage.
    const { producer, resume } = startPaused(producerArgs(url, total), 200);
    await waitFor(() => paused(producer), 'producer under way (paused at 200)');
    mongo.child.kill('SIGSTOP');
    resume();
    try {
      await waitFor(() => spoolBytes(spool) > 20_000, 'spool growing during the outage');
    } finally {
      mongo.child.kill('SIGCONT');
    }
    await finished(producer);
    expect(producer.lines.some((l) => / (unavailable|degraded) [1-9]/.test(l))).toBe(true);
    const sink = await openSink(url);
    await expectExactly(sink, total);
    await sink.close();
    mongo.child.kill('SIGTERM');
    await mongo.exited;
  });
});
