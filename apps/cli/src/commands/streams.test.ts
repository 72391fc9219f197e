import { ValidationError } from '@tickfleet/core';
import { openStore } from '@tickfleet/store';
import { runCli, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { errorExitCode } from '../edge-errors.js';
import { runInProcess } from '../../test/fixtures/in-process-cli.js';

/**
 * `tickfleet streams` run in this process (the command tree main.ts runs, a real SQLite store):
 * a process per command would cost a second each. `status`, which needs Redis, runs as the real
 * binary once.
 */
describe('tickfleet streams', () => {
  let dir: TempDir;
  let store: string;

  /** Runs `tickfleet --store <store> <args>`, returning what it printed on stdout, or what it threw. */
  function cli(...args: string[]): Promise<{ out: string; err?: unknown }> {
    return runInProcess(['--store', store, ...args]);
  }

  /** The ValidationError a command line fails with (exit 2 at the process edge). */
  async function refusal(...args: string[]): Promise<ValidationError> {
    const { err } = await cli(...args);
    expect(err).toBeInstanceOf(ValidationError);
    expect(errorExitCode(err)).toBe(2);
    return err as ValidationError;
  }

  beforeAll(() => {
    dir = tempDir('cli-streams-');
    store = dir.sqliteUrl('state.db');
  });
  afterAll(() => dir.remove());

  it('adds, lists, shows, disables, enables and removes streams, refusing bad input by option', async () => {
    const noConnector = await refusal('streams', 'add', 'majors', '--venue', 'binance', '--symbols', 'BTC/USDT');
    expect(noConnector.message).toBe(
      'invalid --venue: expected a venue with a connector (create it with tickfleet connectors upsert binance --base-url <url> --limit <n>), got "binance"',
    );
    expect((await cli('connectors', 'upsert', 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '1200')).err).toBeUndefined();

    const added = await cli(
      'streams',
      'add',
      'majors',
      '--venue',
      'binance',
      '--symbols',
      'btc/usdt, ETH/USDT,BTC/USDT,',
      '--channels',
      'book,trades',
      '--json',
    );
    expect(added.err).toBeUndefined();
    expect(JSON.parse(added.out)).toMatchObject({
      name: 'majors',
      venue: 'binance',
      symbols: ['BTC/USDT', 'ETH/USDT'],
      channels: ['trades', 'book'],
      bookDepth: 1000,
      enabled: true,
      version: 1,
    });

    expect((await refusal('streams', 'add', 'x', '--venue', 'polygon', '--symbols', 'AAPL/USD')).message).toBe(
      'invalid --venue: expected a venue with streams (binance, kraken), got "polygon"',
    );
    expect((await refusal('streams', 'add', 'x', '--venue', 'binance', '--symbols', 'BTC/USDT,BTCUSDT')).field).toBe('--symbols[1]');
    expect((await refusal('streams', 'add', 'x', '--venue', 'binance', '--symbols', 'BTC/USDT', '--channels', 'book', '--book-depth', '4')).message).toBe(
      'invalid --book-depth: expected an integer in 5..5000 for binance, got 4',
    );
    expect((await refusal('streams', 'add', 'x', '--venue', 'binance', '--symbols', 'BTC/USDT', '--book-depth', '100')).message).toMatch(
      /invalid --book-depth: expected no book depth for a stream without the book channel/,
    );
    const many = Array.from({ length: 513 }, (_, i) => `C${i}/USDT`).join(',');
    expect((await refusal('streams', 'add', 'x', '--venue', 'binance', '--symbols', many, '--channels', 'trades,book')).message).toMatch(
      /^invalid --symbols: expected at most 512 distinct symbols for a binance stream with trades\+book/,
    );

    const list = await cli('streams', 'list');
    expect(list.out).toMatch(/^STREAM\s+VENUE\s+SYMBOLS\s+CHANNELS\s+BOOK DEPTH\s+ENABLED\s+VERSION\s+UPDATED\n/);
    expect(list.out).toMatch(/\nmajors\s+binance\s+2\s+trades,book\s+1000\s+yes\s+1\s+\d{4}-/);
    expect((await cli('streams', 'show', 'majors')).out).toMatch(/\nmajors\s+binance[^\n]*\nBTC\/USDT\nETH\/USDT\n$/);

    expect((await cli('streams', 'disable', 'majors')).out).toMatch(/\nmajors\s+binance\s+2\s+trades,book\s+1000\s+no\s+2\s/);
    // A replace without --disabled keeps it disabled.
    const replaced = JSON.parse((await cli('streams', 'add', 'majors', '--venue', 'binance', '--symbols', 'SOL/USDT', '--json')).out) as Record<
      string,
      unknown
    >;
    expect(replaced).toMatchObject({ symbols: ['SOL/USDT'], channels: ['trades'], bookDepth: null, enabled: false, version: 3 });
    expect(JSON.parse((await cli('streams', 'enable', 'majors', '--json')).out)).toMatchObject({ enabled: true, version: 4 });

    const s = await openStore(store);
    try {
      expect(await s.streams.streamsVersion()).toBe(4);
    } finally {
      await s.close();
    }
    expect(JSON.parse((await cli('streams', 'remove', 'majors', '--json')).out)).toEqual({ name: 'majors', removed: true });
    expect((await refusal('streams', 'show', 'majors')).message).toBe('invalid stream: expected an existing stream (see tickfleet streams list), got "majors"');
    expect((await refusal('streams', 'enable', 'majors')).field).toBe('stream');
    expect(JSON.parse((await cli('streams', 'list', '--json')).out)).toEqual([]);
  });

  describe('in tickfleet status', () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(() => redis.stop());

    it('lists the stream definitions below the venues', async () => {
      await cli('connectors', 'upsert', 'kraken', '--base-url', 'http://127.0.0.1:1', '--limit', '60');
      await cli('streams', 'add', 'kr-books', '--venue', 'kraken', '--symbols', 'BTC/USD,ETH/USD', '--channels', 'book', '--book-depth', '25', '--disabled');
      const status = await runCli(['--store', store, 'status'], { env: { REDIS_URL: redis.url, TICKFLEET_PREFIX: redis.namespace() }, cwd: dir.path });
      expect(status.stderr).toBe('');
      expect(status.stdout).toMatch(/\nstreams\nSTREAM\s+VENUE\s+SYMBOLS\s+CHANNELS[^\n]*\nkr-books\s+kraken\s+2\s+book\s+25\s+no\s+1\s/);
    });
  });
});
