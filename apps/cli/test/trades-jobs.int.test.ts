import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';

describe('tickfleet jobs add … trades', () => {
  let dir: TempDir;
  let store: string;
  const cli = (...args: string[]) => runCli(['--store', store, ...args]);
  beforeEach(() => {
    dir = tempDir();
    store = dir.sqliteUrl();
  });
  afterEach(() => dir.remove());

  it('adds trades jobs where the venue has public trades, refuses a venue without naming it and the job kind', async () => {
    expect((await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000')).code).toBe(0);
    expect((await cli('connectors', 'upsert', 'polymarket', '--base-url', 'https://clob.polymarket.com', '--limit', '100')).code).toBe(0);
    const added = await cli('jobs', 'add', 'binance', 'trades', 'BTC/USDT', '--json');
    expect(added.stderr).toBe('');
    expect(JSON.parse(added.stdout)).toMatchObject({ id: 'binance:BTC/USDT:-:trades', type: 'trades', timeframe: null, cursor: null });
    const refused = await cli('jobs', 'add', 'polymarket', 'trades', '123456');
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toMatch(/invalid type: expected a job type polymarket supports \(book, discovery\), got "trades"$/);
    expect(JSON.parse((await cli('jobs', 'list', '--json')).stdout).map((j: { id: string }) => j.id)).toEqual(['binance:BTC/USDT:-:trades']);
  }, 60_000);
});
