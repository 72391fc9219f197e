import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const MIN = 60_000;

interface GapRow {
  jobId: string;
  fromMs: number;
  toMs: number;
  kind: 'missing' | 'venue-hole';
  attempts: number;
  filledAt: number | null;
}

/**
 * The gap ledger end to end: a backfill over a range where the venue has a hole of its own records
 * the gap; `tickfleet backfill --gaps` turns it into units; fills that keep returning nothing make
 * it a venue hole after two attempts, and it is not turned into units again. A gap we caused
 * ourselves (candles deleted from the sink) is filled and marked filled.
 */
describe('fleet: gap ledger and backfill --gaps', () => {
  let fleet: FleetHarness;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;
  const from = to - 2 * DAY;
  const holeFrom = from + 600 * MIN;
  const holeTo = holeFrom + 30 * MIN;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { holes: { ranges: [{ symbol: 'BTC/USDT', fromMs: holeFrom, toMs: holeTo }] } } } });
  });
  afterAll(() => fleet.stop());

  const gaps = async (): Promise<GapRow[]> => JSON.parse(await fleet.ok('gaps', 'binance:BTC/USDT:1m:ohlcv', '--json')) as GapRow[];
  const backfillGaps = async (): Promise<string> => {
    const out = await fleet.ok('backfill', '--gaps', 'binance:BTC/USDT:1m:ohlcv', '--json');
    const bf = JSON.parse(out) as { id: string } | null;
    if (!bf) return 'none';
    await fleet.backfillDone(bf.id, `backfill ${bf.id} done`, { timeoutMs: 30_000 });
    return bf.id;
  };

  it('records a venue hole as a gap, retries it twice, then marks it a venue hole and stops', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s');
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    const first = JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', from, to, '--json')) as { id: string };
    await fleet.backfillDone(first.id, 'range backfill done', { timeoutMs: 30_000 });

    const stored = await fleet.storedOpenTimes('binance', 'BTC/USDT', '1m');
    expect(stored).toEqual(
      expectedCandles('binance', 'BTC/USDT', '1m', from, to, DEFAULT_SEED, { holes: { ranges: [{ symbol: 'BTC/USDT', fromMs: holeFrom, toMs: holeTo }] } }).map(
        (c) => c.openTime,
      ),
    );
    expect(await gaps()).toEqual([expect.objectContaining({ fromMs: holeFrom, toMs: holeTo, kind: 'missing', attempts: 0, filledAt: null })]);
    const count = JSON.parse(await fleet.ok('data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--sink', fleet.sinkUrl, '--json')) as {
      count: number;
      openGaps: number;
    };
    expect(count).toMatchObject({ count: 2 * 1440 - 30, openGaps: 1 });

    await backfillGaps();
    expect(await gaps()).toEqual([expect.objectContaining({ kind: 'missing', attempts: 1 })]);
    await backfillGaps();
    expect(await gaps()).toEqual([expect.objectContaining({ kind: 'venue-hole', attempts: 2, filledAt: null })]);
    // A venue hole is not turned into units again.
    expect(await backfillGaps()).toBe('none');
    await fleet.stopCleanly(worker);
  }, 120_000);

  it('fills a gap the venue can serve and marks it filled', async () => {
    // Lose 20 stored ETH candles (as a crashed sink might), then scan, then fill.
    const worker = fleet.spawn('worker-2', ['worker']);
    await fleet.ready(worker);
    const eth = JSON.parse(await fleet.backfill('binance', 'ETH/USDT', '1m', from, to, '--json')) as { id: string };
    await fleet.backfillDone(eth.id, 'eth backfill done', { timeoutMs: 30_000 });
    const lostFrom = from + 100 * MIN;
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(new URL(fleet.sinkUrl.replace('sqlite://', 'file://')).pathname);
    const deleted = db
      .prepare('DELETE FROM candles WHERE symbol = ? AND open_time >= ? AND open_time < ?')
      .run('ETH/USDT', lostFrom, lostFrom + 20 * MIN).changes;
    db.close();
    expect(deleted).toBe(20);
    await fleet.ok('gaps', 'scan', 'binance:ETH/USDT:1m:ohlcv');
    const open = JSON.parse(await fleet.ok('gaps', 'binance:ETH/USDT:1m:ohlcv', '--json')) as GapRow[];
    expect(open).toEqual([expect.objectContaining({ fromMs: lostFrom, toMs: lostFrom + 20 * MIN, kind: 'missing', filledAt: null })]);

    const out = await fleet.ok('backfill', '--gaps', 'binance:ETH/USDT:1m:ohlcv', '--json');
    const bf = JSON.parse(out) as { id: string };
    await fleet.backfillDone(bf.id, 'gap fill done', { timeoutMs: 30_000 });
    expect(JSON.parse(await fleet.ok('gaps', 'binance:ETH/USDT:1m:ohlcv', '--json'))).toEqual([]);
    const after = JSON.parse(await fleet.ok('gaps', 'binance:ETH/USDT:1m:ohlcv', '--all', '--json')) as GapRow[];
    expect(after).toEqual([expect.objectContaining({ fromMs: lostFrom, kind: 'missing', filledAt: expect.any(Number) })]);
    expect((await fleet.storedOpenTimes('binance', 'ETH/USDT', '1m')).length).toBe(2 * 1440);
    await fleet.stopCleanly(worker);
  }, 120_000);
});
