import { openStore } from '@tickfleet/store';
import { runCli, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';

describe('tickfleet jobs add … trades, backfill --trades', () => {
  let dir: TempDir;
  let redis: TestRedis;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, { env });
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis.stop());
  beforeEach(() => {
    dir = tempDir();
    env = { REDIS_URL: redis.url, TICKFLEET_PREFIX: redis.namespace(), TICKFLEET_STORE_URL: dir.sqliteUrl(), TICKFLEET_SINK_URL: dir.sqliteUrl('data.db') };
  });
  afterEach(() => dir.remove());

  it('adds trades jobs where the venue has public trades, refuses a venue without naming it and the job kind', async () => {
    expect((await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000')).code).toBe(0);
    expect((await cli('connectors', 'upsert', 'polymarket', '--base-url', 'https://clob.polymarket.com', '--limit', '100')).code).toBe(0);
    expect((await cli('connectors', 'upsert', 'kraken', '--base-url', 'https://api.kraken.com', '--limit', '15')).code).toBe(0);
    const added = await cli('jobs', 'add', 'binance', 'trades', 'BTC/USDT', '--json');
    expect(added.stderr).toBe('');
    expect(JSON.parse(added.stdout)).toMatchObject({ id: 'binance:BTC/USDT:-:trades', type: 'trades', timeframe: null, cursor: null });
    expect((await cli('jobs', 'add', 'kraken', 'trades', 'BTC/USD')).stdout.trim()).toBe('kraken:BTC/USD:-:trades');
    const refused = await cli('jobs', 'add', 'polymarket', 'trades', '123456');
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toMatch(/invalid type: expected a job type polymarket supports \(book, discovery\), got "trades"$/);
    expect(JSON.parse((await cli('jobs', 'list', '--json')).stdout).map((j: { id: string }) => j.id)).toEqual([
      'binance:BTC/USDT:-:trades',
      'kraken:BTC/USD:-:trades',
    ]);

    // A Binance trades cursor is a trade id, a Kraken one the last trade's time.
    const store = await openStore(dir.sqliteUrl());
    try {
      await store.jobs.advanceCursor('binance:BTC/USDT:-:trades', 3_500_123_456);
      await store.jobs.advanceCursor('kraken:BTC/USD:-:trades', Date.UTC(2024, 0, 2, 3, 4, 5));
    } finally {
      await store.close();
    }
    const table = (await cli('jobs', 'list')).stdout;
    expect(table).toMatch(/^binance:BTC\/USDT:-:trades\s.*\strade id 3500123456\s/m);
    expect(table).toMatch(/^kraken:BTC\/USD:-:trades\s.*\s2024-01-02T03:04:05/m);
  }, 90_000);

  it('backfill --trades: refused on a venue serving only its newest trades, and with a timeframe', async () => {
    expect((await cli('connectors', 'upsert', 'coinbase', '--base-url', 'https://api.exchange.coinbase.com', '--limit', '10', '--period', '1s')).code).toBe(0);
    const range = ['--from', '2024-01-01T00:00:00Z', '--to', '2024-01-01T00:10:00Z'];
    const coinbase = await cli('backfill', 'coinbase', 'BTC/USD', '--trades', ...range);
    expect(coinbase.code).toBe(2);
    expect(coinbase.stderr.trim()).toMatch(/^.*invalid --trades: expected a venue answering trades from a time \(coinbase serves only its newest trades/);
    const withTimeframe = await cli('backfill', 'binance', 'BTC/USDT', '--trades', '--timeframe', '1m', ...range);
    expect(withTimeframe.code).toBe(2);
    expect(withTimeframe.stderr).toMatch(/invalid --timeframe: expected no timeframe with --trades/);
    expect(JSON.parse((await cli('jobs', 'list', '--json')).stdout)).toEqual([]);
  }, 90_000);
});
