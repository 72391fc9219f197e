import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';

describe('tickfleet universes', () => {
  let dir: TempDir;
  let store: string;
  const cli = (...args: string[]) => runCli(['--store', store, ...args]);

  beforeAll(() => {
    dir = tempDir();
    store = dir.sqliteUrl();
  });
  afterAll(() => dir.remove());

  it('sets a universe from arguments and a file, shows it, refuses bad input, takes options jobs over it, removes it once unused', async () => {
    const file = join(dir.path, 'megacaps.txt');
    writeFileSync(file, '# top names\nAAPL\n\nMSFT  # software\nAAPL\nBRK.B\n');
    const set = await cli('universes', 'set', 'binance', 'megacaps', 'NVDA', '--file', file, '--json');
    expect(set.stderr).toBe('');
    expect(JSON.parse(set.stdout)).toMatchObject({ venue: 'binance', name: 'megacaps', symbols: ['NVDA', 'AAPL', 'MSFT', 'BRK.B'] });

    const shown = await cli('universes', 'show', 'binance', 'megacaps');
    expect(shown.stdout).toMatch(/^UNIVERSE\s+SYMBOLS[\s\S]*binance\/megacaps\s+4\s+NVDA AAPL MSFT BRK\.B/);

    const bad = await cli('universes', 'set', 'binance', 'megacaps', 'AAPL', '../etc/passwd');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/invalid symbols\[1\]: expected a symbol such as AAPL or BTC\/USDT, got "\.\.\/etc\/passwd"/);

    await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000');
    const missing = await cli('jobs', 'add', 'binance', 'ohlcv', '@nosuch', '--timeframe', '1m');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(
      /invalid symbol: expected an existing universe \(create it with tickfleet universes set binance nosuch <symbols\.\.\.>\), got "binance\/nosuch"/,
    );
    // A type that collects one symbol per job refuses a universe, naming the types that take one.
    const wrongType = await cli('jobs', 'add', 'binance', 'ohlcv', '@megacaps', '--timeframe', '1m');
    expect(wrongType.stderr).toMatch(/invalid symbol: expected one symbol for ohlcv jobs/);

    // A type that collects universes takes it; removing the universe waits until its job is disabled.
    await cli('connectors', 'upsert', 'finnhub', '--base-url', 'https://finnhub.io', '--limit', '60');
    await cli('universes', 'set', 'finnhub', 'megacaps', 'AAPL', 'MSFT');
    const job = await cli('jobs', 'add', 'finnhub', 'options', '@megacaps', '--per-cycle', '2', '--json');
    expect(JSON.parse(job.stdout)).toMatchObject({ id: 'finnhub:@megacaps:-:options', symbol: '@megacaps', perCycle: 2 });
    const inUse = await cli('universes', 'remove', 'finnhub', 'megacaps');
    expect(inUse.stderr).toMatch(
      /invalid universe: expected a universe no enabled job refers to \(disable first: finnhub:@megacaps:-:options\), got "finnhub\/megacaps"/,
    );
    await cli('jobs', 'disable', 'finnhub:@megacaps:-:options');
    expect((await cli('universes', 'remove', 'finnhub', 'megacaps')).code).toBe(0);

    const removed = await cli('universes', 'remove', 'binance', 'megacaps');
    expect(removed.stdout.trim()).toBe('removed binance/megacaps');
    const gone = await cli('universes', 'show', 'binance', 'megacaps');
    expect(gone.stderr).toMatch(/invalid universe: expected an existing universe \(see tickfleet universes list\), got "binance\/megacaps"/);
  });
});
