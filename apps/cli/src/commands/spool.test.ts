import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';
import { tradeEnvelope } from '@tickfleet/core';
import { SqliteSink, Spool } from '@tickfleet/sinks';

const T0 = Date.UTC(2024, 0, 1);

describe('tickfleet spool', () => {
  let dir: TempDir;
  let env: Record<string, string>;
  beforeEach(async () => {
    dir = tempDir('cli-spool-');
    env = { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), TICKFLEET_SPOOL_DIR: dir.file('spool') };
    const spool = Spool.open({ dir: dir.file('spool'), maxSegmentBytes: 2000 });
    await spool.append(
      Array.from({ length: 50 }, (_, i) =>
        tradeEnvelope(
          { venue: 'binance', symbol: 'BTC/USDT', tradeId: String(i), timeMs: T0 + i, price: '1', size: '1' },
          `trade:binance:BTC/USDT:${i}`,
          T0 + i,
        ),
      ),
    );
    await spool.close();
  });
  afterEach(() => dir.remove());

  it('reports status, replays into the sink, and reports it empty', async () => {
    const status = await runCli(['spool', 'status', '--json'], { env });
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout) as { segments: number; bytes: number; oldestReceivedAtMs: number; oldestAgeMs: number; writerPid: number | null };
    expect(s.segments).toBeGreaterThan(1);
    expect(s.bytes).toBeGreaterThan(5000);
    expect(s.oldestReceivedAtMs).toBe(T0);
    expect(s.oldestAgeMs).toBeGreaterThan(0);
    expect(s.writerPid).toBeNull();

    const replay = await runCli(['spool', 'replay', '--json'], { env });
    expect(replay.stderr).toBe('');
    expect(JSON.parse(replay.stdout)).toMatchObject({ records: 50, inserted: 50, duplicates: 0, bytesLeft: 0 });
    const sink = new SqliteSink(dir.file('data.db'));
    expect(await sink.reader.countEnvelopes({ channel: 'trades' })).toBe(50);
    await sink.close();

    const after = await runCli(['spool', 'status'], { env });
    expect(after.stdout).toMatch(/\s0\s+0\s+-\s+-/);
  });

  it('refuses to replay a spool a live process writes (exit 2, naming spoolDir)', async () => {
    writeFileSync(join(dir.file('spool'), 'spool.lock'), String(process.pid));
    const r = await runCli(['spool', 'replay'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`invalid configuration spoolDir`);
    expect(r.stderr).toContain(`held by pid ${process.pid}`);
  });

  it('covers the worker-<n> slots under the spool dir: status sums them, replay drains free ones and skips live ones', async () => {
    const base = dir.file('spool');
    for (const slot of ['worker-0', 'worker-1']) {
      const spool = Spool.open({ dir: join(base, slot), maxSegmentBytes: 2000 });
      await spool.append(
        Array.from({ length: 10 }, (_, i) =>
          tradeEnvelope(
            { venue: 'binance', symbol: 'ETH/USDT', tradeId: `${slot}-${i}`, timeMs: T0 + i, price: '1', size: '1' },
            `trade:binance:ETH/USDT:${slot}-${i}`,
            T0 + 100 + i,
          ),
        ),
      );
      await spool.close();
    }
    // worker-1 is written by a live process (this one).
    writeFileSync(join(base, 'worker-1', 'spool.lock'), String(process.pid));

    const status = JSON.parse((await runCli(['spool', 'status', '--json'], { env })).stdout) as {
      bytes: number;
      slots: Array<{ dir: string; bytes: number; writerPid: number | null }>;
    };
    expect(status.slots.map((x) => x.dir)).toEqual([join(base, 'worker-0'), join(base, 'worker-1')]);
    expect(status.slots[1]!.writerPid).toBe(process.pid);
    expect(status.bytes).toBeGreaterThan(status.slots[0]!.bytes + status.slots[1]!.bytes);

    const replay = await runCli(['spool', 'replay', '--json'], { env });
    expect(replay.code).toBe(0);
    const r = JSON.parse(replay.stdout) as { records: number; inserted: number; skipped: Array<{ dir: string }> };
    expect(r).toMatchObject({ records: 60, inserted: 60 });
    expect(r.skipped.map((x) => x.dir)).toEqual([join(base, 'worker-1')]);
  });
});
