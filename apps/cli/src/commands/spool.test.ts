import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';
import { SqliteSink, Spool, tradeEnvelope } from '@tickfleet/sinks';

const T0 = Date.UTC(2024, 0, 1);

describe('tickfleet spool', () => {
  let dir: TempDir;
  let env: Record<string, string>;
  beforeEach(async () => {
    dir = tempDir('cli-spool-');
    env = { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), TICKFLEET_SPOOL_DIR: dir.file('spool') };
    const spool = Spool.open({ dir: dir.file('spool'), maxSegmentBytes: 2000 });
    await spool.append(Array.from({ length: 50 }, (_, i) => tradeEnvelope({ venue: 'binance', symbol: 'BTC/USDT', tradeId: String(i), timeMs: T0 + i, price: '1', size: '1' }, T0 + i)));
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
});
