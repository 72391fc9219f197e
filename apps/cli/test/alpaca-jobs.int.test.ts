import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';

/** `jobs add` for Alpaca's per-day jobs: a universe for day and minute bars, refused for the timeframes that run incremental units. */
describe('tickfleet jobs add alpaca', () => {
  let dir: TempDir;
  let store: string;
  const cli = (...args: string[]) => runCli(['--store', store, ...args]);

  beforeAll(() => {
    dir = tempDir();
    store = dir.sqliteUrl();
  });
  afterAll(() => dir.remove());

  it('accepts a universe for 1d and 1m bars, refuses it for other timeframes, checks tickers', async () => {
    await cli('connectors', 'upsert', 'alpaca', '--base-url', 'https://data.alpaca.markets', '--limit', '200');
    await cli('universes', 'set', 'alpaca', 'big', 'AAPL', 'MSFT', 'BRK.B');
    const day = await cli('jobs', 'add', 'alpaca', 'ohlcv', '@big', '--timeframe', '1d', '--since', '2024-01-02');
    const minute = await cli('jobs', 'add', 'alpaca', 'ohlcv', '@big', '--timeframe', '1m');
    expect([day.stdout.trim(), minute.stdout.trim()]).toEqual(['alpaca:@big:1d:ohlcv', 'alpaca:@big:1m:ohlcv']);
    const hourly = await cli('jobs', 'add', 'alpaca', 'ohlcv', '@big', '--timeframe', '1h');
    expect(hourly.stderr).toMatch(/invalid symbol: expected one symbol for ohlcv jobs/);
    const badTicker = await cli('jobs', 'add', 'alpaca', 'ohlcv', 'BTC/USD', '--timeframe', '1d');
    expect(badTicker.stderr).toMatch(/invalid symbol: expected an Alpaca stock ticker such as AAPL or BRK\.B, got "BTC\/USD"/);
    // One symbol, a timeframe Alpaca's per-day units do not collect: refused at once, not at run time.
    const hourlyOne = await cli('jobs', 'add', 'alpaca', 'ohlcv', 'AAPL', '--timeframe', '1h');
    expect(hourlyOne.stderr).toMatch(/invalid --timeframe: expected a timeframe alpaca collects \(1d, 1m\), got "1h"/);
    expect(JSON.parse((await cli('jobs', 'list', '--json')).stdout)).toHaveLength(2);
  });
});
