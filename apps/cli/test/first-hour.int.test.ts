import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, runCli, tempDir, type TempDir } from '@tickfleet/testkit';

/** The workspace's package.json files: the root's and every app's and package's. */
function manifests(): Array<{ path: string; version?: string; license?: string }> {
  const root = repoRoot();
  const paths = [join(root, 'package.json')];
  for (const group of ['apps', 'packages']) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const path = join(root, group, name, 'package.json');
      if (existsSync(path)) paths.push(path);
    }
  }
  return paths.map((path) => ({ path: path.slice(root.length + 1), ...(JSON.parse(readFileSync(path, 'utf8')) as { version?: string; license?: string }) }));
}

/** What a new user expects of the CLI in the first hour: its version, its licence, help that shows how, answers that say why. */
describe('tickfleet, small things a user expects', () => {
  let dir: TempDir;
  let cli: (...args: string[]) => ReturnType<typeof runCli>;
  beforeAll(() => {
    dir = tempDir('tickfleet-first-hour-');
    cli = (...args) =>
      runCli(['--store', dir.sqliteUrl(), ...args], { cwd: dir.path, env: { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), REDIS_URL: undefined } });
  });
  afterAll(() => dir.remove());

  it('prints the version of the root package.json, the one version of every package; each is under the LICENSE file', async () => {
    const all = manifests();
    const version = all[0]!.version;
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      expect(r).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
    expect(all.filter((m) => m.version !== version || m.license !== 'MIT').map((m) => m.path)).toEqual([]);
    expect(readFileSync(join(repoRoot(), 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
  });

  it('backfill --help shows how to start a backfill and the options of backfill start', async () => {
    const r = await runCli(['backfill', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('tickfleet backfill binance BTC/USDT --timeframe 1m --from 2024-01-01 --to 2024-01-08 --follow');
    expect(r.stdout).toContain('Usage: tickfleet backfill start [options] [venue] [symbol]');
    for (const option of ['--timeframe <tf>', '--from <iso>', '--to <iso>', '--gaps <jobId>', '--follow', '--max-units <n>', '--sink <url>']) {
      expect(r.stdout).toContain(option);
    }
  });

  it('gaps --help shows the examples and the options of its default command, gaps list', async () => {
    const r = await runCli(['gaps', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('tickfleet gaps scan binance:BTC/USDT:1m:ohlcv');
    expect(r.stdout).toContain('Usage: tickfleet gaps list [options] [jobId]');
    for (const option of ['--all', '--never-requested', '--sink <url>', '--json']) expect(r.stdout).toContain(option);
  });

  it('streams list and gaps with nothing to show say so in one line', async () => {
    expect(await cli('streams', 'list')).toMatchObject({
      code: 0,
      stdout: 'no streams defined (add one: tickfleet streams add <name> --venue binance --symbols BTC/USDT)\n',
    });
    expect((await cli('streams', 'list', '--venue', 'kraken')).stdout).toBe('no streams of kraken\n');
    expect(await cli('gaps')).toMatchObject({ code: 0, stdout: 'no open gaps on the ledger\n' });
    expect((await cli('gaps', '--all')).stdout).toBe('no gaps on the ledger\n');
    expect((await cli('gaps', 'binance:BTC/USDT:1m:ohlcv')).stdout).toBe('no open gaps on the ledger for binance:BTC/USDT:1m:ohlcv\n');
    // With something to show, the tables as before; --json stays a (empty) JSON list.
    expect(JSON.parse((await cli('streams', 'list', '--json')).stdout)).toEqual([]);
    expect(JSON.parse((await cli('gaps', '--json')).stdout)).toEqual([]);
  });

  it('data count of a symbol nothing matches says so and suggests the spelling the jobs use', async () => {
    expect((await cli('connectors', 'upsert', 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '5')).code).toBe(0);
    expect((await cli('jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m')).code).toBe(0);
    const hint = (venue: string, typed: string, suggestion: string) =>
      `no job or stored data matches ${venue} ${typed}${suggestion} (tickfleet jobs list --venue ${venue} shows what is collected)\n`;

    const typo = await cli('data', 'count', 'binance', 'BTCUSDT', '--timeframe', '1m');
    expect(typo.code).toBe(0);
    expect(typo.stdout).toMatch(/^venue\s+symbol.*\nbinance\s+BTCUSDT\s+1m\s+0\s/);
    expect(typo.stderr).toBe(hint('binance', 'BTCUSDT', '; did you mean BTC/USDT?'));
    // --json: stdout is the one JSON document, the hint stays on stderr.
    const json = await cli('data', 'count', 'binance', 'btc-usdt', '--timeframe', '1m', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ symbol: 'btc-usdt', count: 0 });
    expect(json.stderr).toBe(hint('binance', 'btc-usdt', '; did you mean BTC/USDT?'));
    // No job of that pair: Binance's own form read by its quote suffix.
    expect((await cli('data', 'count', 'binance', 'ETHUSDT', '--timeframe', '1m')).stderr).toBe(hint('binance', 'ETHUSDT', '; did you mean ETH/USDT?'));
    expect((await cli('data', 'count', 'polygon', 'FOO', '--timeframe', '1d')).stderr).toBe(hint('polygon', 'FOO', ''));
    // The job's own spelling: nothing stored yet, but nothing to hint at either.
    const spelled = await cli('data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m');
    expect(spelled).toMatchObject({ code: 0, stderr: '' });
  });
});
