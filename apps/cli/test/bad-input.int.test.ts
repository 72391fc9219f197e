import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { expectOneLine, inBatches, openBadInputFleet, type BadInputCase, type BadInputFleet } from './bad-input-fixture.js';

/**
 * Fuzzed arguments of every command: each bad input ends with one line naming the argument or
 * variable and what was expected (exit 2; 1 for an unreachable Redis), never a stack trace or a
 * hang, and nothing stored changes (the store and the fleet's Redis keys are compared with a
 * dump taken before).
 */

const bf = (...rest: string[]): string[] => ['backfill', 'binance', 'BTC/USDT', '--timeframe', '1m', ...rest];
const past = (days: number): string => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

function cases(f: BadInputFleet): BadInputCase[] {
  const unreachable = { REDIS_URL: `redis://127.0.0.1:${f.closedPort}` };
  return [
    { name: 'unknown command', args: ['frobnicate'], code: 2, message: /unknown command 'frobnicate'/ },
    { name: 'unknown option', args: ['status', '--bogus'], code: 2, message: /unknown option '--bogus'/ },
    {
      name: 'store URL with a malformed escape',
      args: ['--store', 'sqlite://%zz', 'connectors', 'list'],
      code: 2,
      message: /invalid store URL.*percent-escapes/,
    },
    {
      name: 'TICKFLEET_STORE_URL with a malformed escape',
      args: ['jobs', 'list'],
      env: { TICKFLEET_STORE_URL: 'sqlite:///tmp/%E0%A4%A' },
      code: 2,
      message: /invalid store URL/,
    },
    {
      name: 'mongodb store URL with a malformed escape',
      args: ['--store', 'mongodb://127.0.0.1:1/%zz', 'connectors', 'list'],
      code: 2,
      message: /invalid store URL/,
    },
    {
      name: 'store that is not a database',
      args: ['--store', `sqlite://${f.notADatabase}`, 'connectors', 'list'],
      code: 2,
      message: /invalid --store \(TICKFLEET_STORE_URL\).*SQLite database file/,
    },
    { name: 'connector base URL', args: ['connectors', 'upsert', 'binance', '--base-url', 'notaurl', '--limit', '5'], code: 2, message: /invalid --base-url/ },
    { name: 'connector limit', args: ['connectors', 'upsert', 'binance', '--base-url', 'http://x', '--limit', '-5'], code: 2, message: /invalid --limit/ },
    {
      name: 'connector venue name',
      args: ['connectors', 'upsert', 'Bad Venue', '--base-url', 'http://x', '--limit', '5'],
      code: 2,
      message: /invalid venue: expected a venue name/,
    },
    { name: 'unknown connector', args: ['connectors', 'pause', 'nosuch'], code: 2, message: /invalid venue: expected an existing connector/ },
    {
      name: 'job symbol as a path',
      args: ['jobs', 'add', 'binance', 'ohlcv', '../../etc/passwd', '--timeframe', '1m'],
      code: 2,
      message: /invalid symbol.*"\.\.\/\.\.\/etc\/passwd"/,
    },
    {
      name: 'job symbol with an absolute path',
      args: ['jobs', 'add', 'binance', 'ohlcv', '/etc/passwd', '--timeframe', '1m'],
      code: 2,
      message: /invalid symbol/,
    },
    {
      name: 'job symbol the venue cannot list',
      args: ['jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT/X', '--timeframe', '1m'],
      code: 2,
      message: /invalid symbol: expected a Binance pair/,
    },
    { name: 'job timeframe', args: ['jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '7m'], code: 2, message: /invalid --timeframe/ },
    {
      name: 'job since 1900',
      args: ['jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m', '--since', '1900-01-01'],
      code: 2,
      message: /invalid --since: expected an ISO date .*from 1990-01-01/,
    },
    {
      name: 'job since Feb 30',
      args: ['jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m', '--since', '2024-02-30'],
      code: 2,
      message: /invalid --since.*"2024-02-30"/,
    },
    {
      name: 'job priority',
      args: ['jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m', '--priority', '99999'],
      code: 2,
      message: /invalid --priority/,
    },
    { name: 'job type without an adapter', args: ['jobs', 'add', 'binance', 'options', 'ETH/USDT'], code: 2, message: /invalid type/ },
    { name: 'job id', args: ['jobs', 'show', 'garbage'], code: 2, message: /invalid jobId/ },
    { name: 'backfill from Feb 30', args: bf('--from', '2024-02-30', '--to', '2024-03-02'), code: 2, message: /invalid --from.*"2024-02-30"/ },
    {
      name: 'backfill symbol as a path',
      args: ['backfill', 'binance', '../../etc/passwd', '--timeframe', '1m', '--from', '2024-01-01', '--to', '2024-01-02'],
      code: 2,
      message: /invalid symbol/,
    },
    {
      name: 'backfill of a new symbol from the future',
      args: ['backfill', 'binance', 'ETH/USDT', '--timeframe', '1m', '--from', '2030-01-01', '--to', '2030-01-02'],
      code: 2,
      message: /invalid --from: expected a time in the past/,
    },
    {
      name: 'backfill ending in the future',
      args: bf('--from', past(2), '--to', '2030-01-01'),
      code: 2,
      message: /invalid --to: expected a time not after now/,
    },
    { name: 'backfill of year 1 to 9999', args: bf('--from', '0001-01-01', '--to', '9999-12-31'), code: 2, message: /invalid --from/ },
    {
      name: 'backfill of a new symbol over 34 years',
      args: ['backfill', 'binance', 'ETH/USDT', '--timeframe', '1m', '--from', '1990-01-01', '--to', '2024-01-01'],
      code: 2,
      message: /at most 10000 units .*needs 178\d\d.*--max-units/,
    },
    {
      name: 'backfill over the raised cap',
      args: bf('--from', '2020-01-01', '--to', '2024-01-01', '--max-units', '100'),
      code: 2,
      message: /at most 100 units/,
    },
    {
      name: 'backfill --max-units above the ceiling',
      args: bf('--from', past(2), '--to', past(1), '--max-units', '99999999'),
      code: 2,
      message: /invalid --max-units: expected at most/,
    },
    { name: 'backfill reversed range', args: bf('--from', '2024-01-02', '--to', '2024-01-01'), code: 2, message: /invalid --to: expected a time after --from/ },
    {
      name: 'backfill without a timeframe',
      args: ['backfill', 'binance', 'BTC/USDT', '--from', '2024-01-01', '--to', '2024-01-02'],
      code: 2,
      message: /invalid --timeframe/,
    },
    {
      name: 'backfill of an unknown venue',
      args: ['backfill', 'nosuch', 'BTC/USDT', '--timeframe', '1m', '--from', '2024-01-01', '--to', '2024-01-02'],
      code: 2,
      message: /invalid venue: expected an existing connector/,
    },
    {
      name: 'backfill with a bad prefix',
      args: bf('--from', '2024-01-01', '--to', '2024-01-02'),
      env: { TICKFLEET_PREFIX: 'bad{prefix}' },
      code: 2,
      message: /invalid configuration TICKFLEET_PREFIX/,
    },
    {
      name: 'backfill with REDIS_URL not a URL',
      args: bf('--from', '2024-01-01', '--to', '2024-01-02'),
      env: { REDIS_URL: 'notaurl' },
      code: 2,
      message: /invalid configuration REDIS_URL.*"notaurl"/,
    },
    {
      name: 'backfill with an unreachable Redis',
      args: bf('--from', '2024-01-01', '--to', '2024-01-02'),
      env: unreachable,
      code: 1,
      message: /Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer within 10 s/,
    },
    { name: 'backfill status of an unknown id', args: ['backfill', 'status', 'nope'], code: 2, message: /invalid backfill id/ },
    { name: 'queues with REDIS_URL not a URL', args: ['queues'], env: { REDIS_URL: 'notaurl' }, code: 2, message: /invalid configuration REDIS_URL/ },
    { name: 'queues with an unreachable Redis', args: ['queues'], env: unreachable, code: 1, message: /did not answer within 10 s/ },
    { name: 'status with an unreachable Redis', args: ['status'], env: unreachable, code: 1, message: /did not answer within 10 s/ },
    { name: 'units clean duration', args: ['units', 'clean', 'binance', '--older-than', 'xyz'], code: 2, message: /invalid --older-than/ },
    {
      name: 'data count date',
      args: ['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--from', '2024-13-01'],
      code: 2,
      message: /invalid --from/,
    },
    {
      name: 'data export format',
      args: ['data', 'export', 'binance', 'BTC/USDT', '--timeframe', '1m', '--format', 'xml'],
      code: 2,
      message: /invalid --format/,
    },
    { name: 'gaps scan job id', args: ['gaps', 'scan', 'garbage'], code: 2, message: /invalid jobId/ },
    { name: 'units retry-failed venue', args: ['units', 'retry-failed', 'Bad'], code: 2, message: /invalid venue/ },
    { name: 'gaps job id', args: ['gaps', 'garbage'], code: 2, message: /invalid jobId/ },
    {
      name: 'spool status of a file',
      args: ['spool', 'status'],
      env: { TICKFLEET_SPOOL_DIR: '/dev/null' },
      code: 2,
      message: /invalid --spool-dir \(TICKFLEET_SPOOL_DIR\): expected a directory/,
    },
    { name: 'spool replay of a file', args: ['spool', 'replay', '--spool-dir', '/dev/null'], code: 2, message: /invalid --spool-dir/ },
    { name: 'spool unknown option', args: ['spool', 'replay', '--bogus'], code: 2, message: /unknown option '--bogus'/ },
    { name: 'up workers', args: ['up', '--workers', '0'], code: 2, message: /invalid --workers/ },
    { name: 'up too many workers', args: ['up', '--workers', '100'], code: 2, message: /invalid --workers: expected at most 32/ },
    { name: 'up log size', args: ['up', '--log-max-bytes', '0'], code: 2, message: /invalid --log-max-bytes/ },
    { name: 'scheduler tick', args: ['scheduler', '--tick', '0'], code: 2, message: /invalid --tick/ },
    { name: 'worker venues', args: ['worker', '--venues', 'A,b'], code: 2, message: /invalid --venues/ },
    { name: 'dashboard port', args: ['dashboard', '--port', '70000'], code: 2, message: /invalid --port/ },
    { name: 'mock-venue port', args: ['mock-venue', '--port', '99999'], code: 2, message: /invalid --port/ },
    // A value left out is refused in the one-line style of every other bad value, not commander's `error: required option`.
    {
      name: 'streams add without --venue',
      args: ['streams', 'add', 'majors', '--symbols', 'BTC/USDT'],
      code: 2,
      message: /^tickfleet: invalid --venue: expected a value; this command requires it: venue with streams \(binance, kraken\)/,
    },
    {
      name: 'streams add without --symbols',
      args: ['streams', 'add', 'majors', '--venue', 'binance'],
      code: 2,
      message: /^tickfleet: invalid --symbols: expected a value; this command requires it: comma-separated pairs/,
    },
    {
      name: 'streams add with --venue and no value',
      args: ['streams', 'add', 'majors', '--symbols', 'BTC/USDT', '--venue'],
      code: 2,
      message: /^tickfleet: invalid --venue: expected a value after it/,
    },
    {
      name: 'streams add without a name',
      args: ['streams', 'add', '--venue', 'binance', '--symbols', 'BTC/USDT'],
      code: 2,
      message: /^tickfleet: invalid name: expected a value \(usage: tickfleet streams add \[options\] <name>\)/,
    },
    {
      name: 'data export without --format',
      args: ['data', 'export', 'binance', 'BTC/USDT', '--timeframe', '1m'],
      code: 2,
      message: /^tickfleet: invalid --format: expected a value; this command requires it: csv \| jsonl/,
    },
    { name: 'mock-venue without --port', args: ['mock-venue'], code: 2, message: /^tickfleet: invalid --port: expected a value; this command requires it/ },
    {
      name: 'universes set without a name',
      args: ['universes', 'set', 'binance'],
      code: 2,
      message: /^tickfleet: invalid name: expected a value \(usage: tickfleet universes set \[options\] <venue> <name> \[symbols\.\.\.\]\)/,
    },
    // Universes: only venues tickfleet collects from, and a symbol file read with a bound.
    {
      name: 'universes set of an unknown venue',
      args: ['universes', 'set', 'nosuch', 'majors', 'BTC/USDT'],
      code: 2,
      message: /^tickfleet: invalid venue: expected a venue with an adapter or a connector \(alpaca, binance, .*xetra\), got "nosuch"/,
    },
    {
      name: 'universes set --file /dev/zero',
      args: ['universes', 'set', 'binance', 'majors', '--file', '/dev/zero'],
      code: 2,
      message: /^tickfleet: invalid --file: expected a symbol file of at most 1048576 bytes, got "\/dev\/zero"/,
    },
    {
      name: 'universes set --file of a directory',
      args: ['universes', 'set', 'binance', 'majors', '--file', f.dir.path],
      code: 2,
      message: /invalid --file: expected a symbol file this process can read \(EISDIR\)/,
    },
    {
      name: 'mock-venue --scenario /dev/zero',
      args: ['mock-venue', '--port', '0', '--scenario', '/dev/zero'],
      code: 2,
      message: /^tickfleet: invalid --scenario: expected a scenario JSON file of at most 1048576 bytes/,
    },
  ];
}

describe('bad command-line input', () => {
  let fleet: BadInputFleet;
  let baseline: string;

  beforeAll(async () => {
    fleet = await openBadInputFleet();
    baseline = await fleet.dump();
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
  });

  it('every case exits with its code and one line naming the input, and nothing stored changes', async () => {
    const table = cases(fleet);
    const notADatabase = readFileSync(fleet.notADatabase);
    const unreachable = (c: BadInputCase): boolean => c.env?.REDIS_URL?.endsWith(`:${fleet.closedPort}`) === true;
    const results = await inBatches(table, 3, async (c) => ({ c, r: await fleet.run(c.args, c.env) }), unreachable);
    const wrong: string[] = [];
    for (const { c, r } of results) {
      if (r.code !== c.code || !c.message.test(r.stderr) || r.stdout !== '') {
        wrong.push(`${c.name}: exit ${r.code}, stdout ${JSON.stringify(r.stdout.slice(0, 200))}, stderr ${JSON.stringify(r.stderr.slice(0, 400))}`);
        continue;
      }
      expectOneLine(r.stderr);
    }
    expect(wrong).toEqual([]);
    expect(await fleet.dump()).toBe(baseline);
    expect(readFileSync(fleet.notADatabase).equals(notADatabase)).toBe(true);
  }, 600_000);

  it('universes set --file stops reading at its bounds: 2 MB from a FIFO, the 5,001st distinct symbol', async () => {
    // A FIFO has no size to check first: its writer offers 2 MB (repeated lines, so only the byte bound applies).
    const fifo = fleet.dir.file('symbols.fifo');
    execFileSync('mkfifo', [fifo]);
    // The FIFO opened read-write does not block; the writer holds the only write end once it is closed here.
    const fd = openSync(fifo, 'w+');
    const writer = spawn(
      process.execPath,
      ['-e', `process.stdout.on('error', () => process.exit(0)); process.stdout.write('AAPL\\n'.repeat(${Math.ceil((2 << 20) / 5)}))`],
      { stdio: ['ignore', fd, 'ignore'] },
    );
    closeSync(fd);
    const writerDone = new Promise((r) => writer.once('exit', r));
    const piped = await fleet.run(['universes', 'set', 'binance', 'majors', '--file', fifo]);
    writer.kill();
    await writerDone;
    expect(piped.code).toBe(2);
    expect(piped.stderr).toBe(`tickfleet: invalid --file: expected a symbol file of at most 1048576 bytes, got ${JSON.stringify(fifo)}\n`);

    // 5,001 distinct symbols: refused at the cap (arguments count), 5,000 accepted.
    const many = fleet.dir.file('many.txt');
    writeFileSync(many, Array.from({ length: 4999 }, (_, i) => `S${i}\n`).join(''));
    const over = await fleet.run(['universes', 'set', 'binance', 'majors', 'X1', 'X2', '--file', many]);
    expect(over.code).toBe(2);
    expect(over.stderr).toBe(
      `tickfleet: invalid --file: expected at most 5000 distinct symbols per universe, arguments included, got ${JSON.stringify(many)}\n`,
    );
    expect(await fleet.dump()).toBe(baseline);
    const atCap = await fleet.run(['universes', 'set', 'binance', 'majors', 'X1', 'S0', '--file', many, '--json']);
    expect(atCap.stderr).toBe('');
    expect((JSON.parse(atCap.stdout) as { symbols: string[] }).symbols).toHaveLength(5000);
    expect((await fleet.run(['universes', 'remove', 'binance', 'majors'])).code).toBe(0);
    expect(await fleet.dump()).toBe(baseline);
  });

  it('an unknown command prints one line and a hint, not the help', async () => {
    const r = await fleet.run(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual(["error: unknown command 'frobnicate'", '(run tickfleet --help, or tickfleet <command> --help, for usage)']);
  });

  it('a valid backfill right below the unit cap is accepted, and --max-units raises the cap', async () => {
    // 2 days of 1m candles = 2880 candles = 3 units of 1000: refused at --max-units 2, accepted at 3.
    const refused = await fleet.run(bf('--from', past(3), '--to', past(1), '--max-units', '2'));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/at most 2 units .*needs 3/);
    expect(await fleet.dump()).toBe(baseline);
    const accepted = await fleet.run([...bf('--from', past(3), '--to', past(1), '--max-units', '3'), '--json']);
    expect(accepted.stderr).toBe('');
    expect(accepted.code).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ unitsTotal: 3 });
  });
});
