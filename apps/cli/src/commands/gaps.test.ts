import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';
import { SqliteSink, candleEnvelope } from '@tickfleet/sinks';

const T0 = Date.UTC(2024, 0, 1);
const M = 60_000;
const JOB = 'binance:BTC/USDT:1m:ohlcv';

describe('tickfleet gaps', () => {
  let dir: TempDir;
  let env: Record<string, string>;
  beforeAll(async () => {
    dir = tempDir('cli-gaps-');
    env = { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), TICKFLEET_STORE_URL: dir.sqliteUrl('state.db') };
    const sink = new SqliteSink(dir.file('data.db'));
    await sink.write(
      [0, 1, 4, 5, 9].map((m) =>
        candleEnvelope(
          { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', openTime: T0 + m * M, open: '1', high: '1', low: '1', close: '1', volume: '1' },
          T0 + (m + 1) * M,
        ),
      ),
    );
    await sink.close();
  });
  afterAll(() => dir.remove());

  it('scans a job on demand, records its gaps once, and lists them', async () => {
    const scan = await runCli(['gaps', 'scan', JOB, '--json'], { env });
    expect(scan.stderr).toBe('');
    expect(JSON.parse(scan.stdout)).toMatchObject({
      jobId: JOB,
      recorded: 2,
      filled: 0,
      open: [
        { fromMs: T0 + 2 * M, toMs: T0 + 4 * M },
        { fromMs: T0 + 6 * M, toMs: T0 + 9 * M },
      ],
    });
    expect(JSON.parse((await runCli(['gaps', 'scan', JOB, '--json'], { env })).stdout)).toMatchObject({ recorded: 0 });
    const list = await runCli(['gaps', JOB, '--json'], { env });
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ fromMs: number; kind: string }>).map((g) => [g.fromMs, g.kind])).toEqual([
      [T0 + 2 * M, 'missing'],
      [T0 + 6 * M, 'missing'],
    ]);
    const table = await runCli(['gaps'], { env });
    expect(table.stdout).toContain('2024-01-01T00:06:00.000Z');
    const count = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--json'], { env });
    expect(JSON.parse(count.stdout)).toMatchObject({ openGaps: 2, count: 5 });
  });

  it('names a bad job id (exit 2)', async () => {
    const r = await runCli(['gaps', 'scan', 'binance:BTC/USDT'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('invalid jobId');
  });
});
