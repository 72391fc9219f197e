import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

interface BackfillReport {
  id: string;
  status: string;
  unitsDone: number;
  unitsFailed: number;
  unitsTotal: number;
  failedChunks: Array<{ fromMs: number; toMs: number; error: string | null }>;
}

/**
 * Backfill progress is the record of which chunks finished: a backfill whose chunks cannot be
 * collected ends `failed` with each chunk's reason (and `--follow` returns non-zero) instead of
 * staying `pending 0/N` forever; `backfill --gaps` also owes the range between the job's `since`
 * and its first stored candle.
 */
describe('fleet: backfill truth', () => {
  let fleet: FleetHarness;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 20 } } });
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '2');
  });
  afterAll(() => fleet.stop());

  it('ends a backfill of a symbol the venue does not list as failed with the reasons, and --follow exits 1', async () => {
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    // 2 days of 1m candles = 3 chunks of at most 1000; each unit gets 400 "Invalid symbol".
    const follow = await fleet.cli([
      'backfill',
      'binance',
      'NOPE/USDT',
      '--timeframe',
      '1m',
      '--from',
      new Date(to - 2 * DAY).toISOString(),
      '--to',
      new Date(to).toISOString(),
      '--follow',
    ]);
    expect({ code: follow.code, stderr: follow.stderr }).toEqual({ code: 1, stderr: '' });
    expect(follow.stdout).toMatch(/^bf-[0-9a-f]{8}: failed, 0\/3 units, 3 failed$/m);
    const reasons = follow.stdout.split('\n').filter((l) => l.startsWith('failed chunk '));
    expect(reasons).toHaveLength(3);
    for (const line of reasons) expect(line).toMatch(/: unrecoverable: .*Invalid symbol/);

    const id = /^(bf-[0-9a-f]{8}):/m.exec(follow.stdout)![1]!;
    const status = JSON.parse(await fleet.ok('backfill', 'status', id, '--json')) as BackfillReport;
    expect(status).toMatchObject({ status: 'failed', unitsDone: 0, unitsFailed: 3, unitsTotal: 3 });
    expect(status.failedChunks.map((c) => c.fromMs)).toEqual([to - 2 * DAY, to - 2 * DAY + 1000 * 60_000, to - 2 * DAY + 2000 * 60_000]);
    const table = await fleet.ok('backfill', 'status', id);
    expect(table).toMatch(/failed chunk .*Invalid symbol/);
    await fleet.stopCleanly(worker);
  }, 120_000);

  it("backfill --gaps owes the range from the job's since to its first stored candle", async () => {
    const since = to - 2 * DAY;
    await fleet.ok('jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m', '--since', new Date(since).toISOString());
    // No scheduler: only backfills run. Store the second day only (the first day's units "lost").
    const worker = fleet.spawn('worker-gaps', ['worker']);
    await fleet.ready(worker);
    const second = JSON.parse(await fleet.backfill('binance', 'ETH/USDT', '1m', to - DAY, to, '--json')) as BackfillReport;
    await fleet.backfillDone(second.id, 'second-day backfill done');
    expect(await fleet.candleReport('binance', 'ETH/USDT', '1m', since, to)).toMatchObject({ missing: 1440, duplicates: 0 });

    const repair = JSON.parse(await fleet.ok('backfill', '--gaps', 'binance:ETH/USDT:1m:ohlcv', '--json')) as BackfillReport;
    expect(repair).toMatchObject({ fromMs: since, toMs: to - DAY, unitsTotal: 2 });
    await fleet.backfillDone(repair.id, 'head backfill done');
    expect(await fleet.candleReport('binance', 'ETH/USDT', '1m', since, to)).toMatchObject({
      expected: 2880,
      stored: 2880,
      missing: 0,
      duplicates: 0,
      unexpected: 0,
    });
    // Nothing before the first stored candle is owed any more.
    expect((await fleet.ok('backfill', '--gaps', 'binance:ETH/USDT:1m:ohlcv')).trim()).toBe('nothing to backfill: no open gaps');
    await fleet.stopCleanly(worker);
  }, 120_000);
});
