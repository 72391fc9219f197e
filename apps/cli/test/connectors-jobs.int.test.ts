import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';
import { inBatches } from './bad-input-fixture.js';

describe('tickfleet connectors and jobs', () => {
  let dir: TempDir;
  let store: string;
  const cli = (...args: string[]) => runCli(['--store', store, ...args]);

  beforeEach(() => {
    dir = tempDir();
    store = dir.sqliteUrl();
  });
  afterEach(() => dir.remove());

  it('upserts one connector per venue, lists, shows, pauses and resumes it', async () => {
    const created = await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000', '--period', '60s', '--json');
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({
      venue: 'binance',
      status: 'active',
      rateLimit: { limit: 6000, periodMs: 60_000, policy: 'fixed-window', headroom: 0.95 },
    });

    const updated = await cli('connectors', 'upsert', 'binance', '--limit', '1200', '--policy', 'gcra', '--max-inflight', '8', '--json');
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ baseUrl: 'https://api.binance.com', maxInflight: 8, rateLimit: { limit: 1200, policy: 'gcra' } });

    // AIMD settings: given keys change, the others keep their values (here the defaults).
    const aimd = await cli('connectors', 'upsert', 'binance', '--aimd', 'min=2,stable=45s,p95-low=1s,start=floor,restart-after=0', '--json');
    expect(aimd.stderr).toBe('');
    expect(JSON.parse(aimd.stdout).aimd).toEqual({
      min: 2,
      increaseAfterMs: 30_000,
      stableMs: 45_000,
      maxFailureRatio: 0.2,
      maxP95LatencyMs: 10_000,
      lowP95LatencyMs: 1000,
      start: 'floor',
      restartAfterMs: 0,
    });
    expect(JSON.parse((await cli('connectors', 'upsert', 'binance', '--aimd', 'max=6', '--json')).stdout).aimd).toMatchObject({
      min: 2,
      max: 6,
      stableMs: 45_000,
    });

    const list = await cli('connectors', 'list', '--json');
    expect(JSON.parse(list.stdout)).toHaveLength(1);

    const table = await cli('connectors', 'list');
    expect(table.stdout).toMatch(/^VENUE\s+STATUS/);
    expect(table.stdout).toMatch(/binance\s+active\s+gcra\s+1200\s+1140/);

    expect(JSON.parse((await cli('connectors', 'pause', 'binance', '--json')).stdout).status).toBe('paused');
    expect(JSON.parse((await cli('connectors', 'show', 'binance', '--json')).stdout).status).toBe('paused');
    expect(JSON.parse((await cli('connectors', 'resume', 'binance', '--json')).stdout).status).toBe('active');
  });

  it("sets an order-book venue's cooldown settings, reads them back, and keeps the ones not given", async () => {
    const created = await cli(
      'connectors',
      'upsert',
      'polymarket',
      '--base-url',
      'https://clob.polymarket.com',
      '--limit',
      '1500',
      '--period',
      '10s',
      '--json',
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).bookCooldown).toEqual({ failureRatio: 0.5, minPolls: 5, windowMs: 5000, cooldownMs: 30_000 });

    const set = await cli(
      'connectors',
      'upsert',
      'polymarket',
      '--cooldown-ratio',
      '0.8',
      '--cooldown-min-polls',
      '12',
      '--cooldown-window',
      '10s',
      '--cooldown',
      '2m',
    );
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    const shown = async () => JSON.parse((await cli('connectors', 'show', 'polymarket', '--json')).stdout) as Record<string, unknown>;
    expect((await shown()).bookCooldown).toEqual({ failureRatio: 0.8, minPolls: 12, windowMs: 10_000, cooldownMs: 120_000 });

    // One flag changes its own setting only; an update without cooldown flags keeps them all.
    expect((await cli('connectors', 'upsert', 'polymarket', '--cooldown', '45s')).code).toBe(0);
    expect((await cli('connectors', 'upsert', 'polymarket', '--limit', '1000')).code).toBe(0);
    expect(await shown()).toMatchObject({
      rateLimit: { limit: 1000, periodMs: 10_000 },
      bookCooldown: { failureRatio: 0.8, minPolls: 12, windowMs: 10_000, cooldownMs: 45_000 },
    });

    // AIMD restart period: 0 (never) or at least the workers' liveness window.
    const restart = await cli('connectors', 'upsert', 'polymarket', '--aimd', 'restart-after=15s', '--json');
    expect(restart.stderr).toBe('');
    expect(JSON.parse(restart.stdout).aimd).toMatchObject({ restartAfterMs: 15_000 });
  });

  it("sets a xetra connector's per-market pacing: burst on create, even on update, other fields kept", async () => {
    const created = await cli(
      'connectors',
      'upsert',
      'xetra',
      '--base-url',
      'https://mfs.deutsche-boerse.com/api',
      '--limit',
      '5',
      '--period',
      '2s',
      '--pacing',
      'burst',
      '--json',
    );
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ venue: 'xetra', pacing: 'burst', rateLimit: { limit: 5, periodMs: 2000 } });
    const updated = JSON.parse((await cli('connectors', 'upsert', 'xetra', '--pacing', 'even', '--json')).stdout);
    expect(updated).toMatchObject({ pacing: 'even', baseUrl: 'https://mfs.deutsche-boerse.com/api', rateLimit: { limit: 5, periodMs: 2000 } });
    // an update without --pacing keeps it
    expect(JSON.parse((await cli('connectors', 'upsert', 'xetra', '--limit', '4', '--json')).stdout)).toMatchObject({
      pacing: 'even',
      rateLimit: { limit: 4 },
    });
    expect((await cli('connectors', 'list')).stdout).toMatch(/^VENUE.*\bPACING\b.*\nxetra\s.*\beven\b/s);
  });

  it("turns a venue's book loop on with a cadence, changes its shares and depth, keeps it across other updates, and turns it off", async () => {
    const on = await cli(
      'connectors',
      'upsert',
      'polymarket',
      '--base-url',
      'https://clob.polymarket.com',
      '--limit',
      '1500',
      '--period',
      '10s',
      '--book-loop',
      '1s',
      '--json',
    );
    expect(on.stderr).toBe('');
    expect(JSON.parse(on.stdout)).toMatchObject({ venue: 'polymarket', bookLoop: { cadenceMs: 1000, shares: 8 } });
    const shares = JSON.parse((await cli('connectors', 'upsert', 'polymarket', '--book-loop-shares', '4', '--json')).stdout);
    expect(shares.bookLoop).toEqual({ cadenceMs: 1000, shares: 4 });
    expect(JSON.parse((await cli('connectors', 'upsert', 'polymarket', '--limit', '1400', '--json')).stdout).bookLoop).toEqual({ cadenceMs: 1000, shares: 4 });
    // a depth for the loop's adapter, kept when the shares change
    const depth = JSON.parse((await cli('connectors', 'upsert', 'polymarket', '--book-loop-depth', '1', '--json')).stdout);
    expect(depth.bookLoop).toEqual({ cadenceMs: 1000, shares: 4, depth: 1 });
    expect(JSON.parse((await cli('connectors', 'upsert', 'polymarket', '--book-loop-shares', '2', '--json')).stdout).bookLoop).toEqual({
      cadenceMs: 1000,
      shares: 2,
      depth: 1,
    });
    const off = JSON.parse((await cli('connectors', 'upsert', 'polymarket', '--no-book-loop', '--json')).stdout);
    expect(off.bookLoop).toBeUndefined();
    const bad = await cli('connectors', 'upsert', 'polymarket', '--book-loop-shares', '2');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--book-loop/);
  });

  it('adds jobs, prints the id, lists, shows, disables and enables them', async () => {
    await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000');
    const added = await cli('jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m', '--since', '2024-01-01', '--priority', '5');
    expect(added.stderr).toBe('');
    expect(added.stdout.trim()).toBe('binance:BTC/USDT:1m:ohlcv');

    const again = await cli('jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m', '--priority', '7');
    expect(again.stdout.trim()).toBe('binance:BTC/USDT:1m:ohlcv');
    const jobs = JSON.parse((await cli('jobs', 'list', '--json')).stdout) as Array<{ id: string; priority: number; since: number }>;
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ priority: 7, since: Date.UTC(2024, 0, 1) });

    const shown = JSON.parse((await cli('jobs', 'show', 'binance:BTC/USDT:1m:ohlcv', '--json')).stdout);
    expect(shown).toMatchObject({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', enabled: true });
    expect(JSON.parse((await cli('jobs', 'disable', 'binance:BTC/USDT:1m:ohlcv', '--json')).stdout).enabled).toBe(false);
    expect(JSON.parse((await cli('jobs', 'enable', 'binance:BTC/USDT:1m:ohlcv', '--json')).stdout).enabled).toBe(true);
  });

  const badInvocations: Array<[string[], RegExp]> = [
    [['connectors', 'upsert', 'Bin ance', '--base-url', 'https://x.io', '--limit', '5'], /invalid venue/],
    [['connectors', 'upsert', 'kraken', '--base-url', 'ftp://x.io', '--limit', '5'], /invalid --base-url: expected an http\(s\) URL/],
    [['connectors', 'upsert', 'kraken', '--base-url', 'not a url', '--limit', '5'], /invalid --base-url/],
    [['connectors', 'upsert', 'kraken', '--base-url', 'https://x.io', '--limit', '-5'], /invalid --limit: expected a positive integer, got "-5"/],
    [['connectors', 'upsert', 'kraken', '--base-url', 'https://x.io', '--limit', '5', '--period', '1 fortnight'], /invalid --period/],
    [['connectors', 'upsert', 'binance', '--aimd', 'speed=3'], /invalid --aimd: expected comma-separated key=value pairs with keys min, max, .*got "speed=3"/],
    [['connectors', 'upsert', 'binance', '--aimd', 'start=middle'], /invalid --aimd start: expected one of floor, ceiling, got "middle"/],
    [['connectors', 'upsert', 'binance', '--aimd', 'p95-low=20s'], /lowP95LatencyMs.*at most the high one/],
    [
      ['connectors', 'upsert', 'binance', '--aimd', 'min=1,restart-after=5s'],
      /invalid --aimd restart-after: expected 0 \(never\) or a duration of at least 15s \(the workers' liveness window\), such as 60s, got "5s"/,
    ],
    [['connectors', 'upsert', 'binance', '--cooldown-ratio', '1.5'], /invalid --cooldown-ratio: expected a number in \(0, 1\], got "1.5"/],
    [['connectors', 'upsert', 'binance', '--cooldown-ratio', '0'], /invalid --cooldown-ratio: expected a number in \(0, 1\], got "0"/],
    [['connectors', 'upsert', 'binance', '--cooldown-min-polls', '0'], /invalid --cooldown-min-polls: expected a positive integer, got "0"/],
    [['connectors', 'upsert', 'binance', '--cooldown-min-polls', '2.5'], /invalid --cooldown-min-polls: expected a positive integer, got "2.5"/],
    [
      ['connectors', 'upsert', 'binance', '--cooldown-window', 'soon'],
      /invalid --cooldown-window: expected a positive duration such as 500ms, 10s, 1m, 1h, got "soon"/,
    ],
    [['connectors', 'upsert', 'binance', '--cooldown', '0s'], /invalid --cooldown: expected a positive duration such as 500ms, 10s, 1m, 1h, got "0s"/],
    [
      ['connectors', 'upsert', 'kraken', '--base-url', 'https://x.io', '--limit', '5', '--policy', 'token-bucket'],
      /invalid --policy: expected one of fixed-window, gcra/,
    ],
    [['connectors', 'upsert', 'kraken', '--limit', '5'], /invalid --base-url/],
    [['connectors', 'upsert', 'xetra', '--base-url', 'https://x.io', '--limit', '5', '--pacing', 'jittery'], /invalid --pacing: expected one of even, burst/],
    [
      ['connectors', 'upsert', 'binance', '--base-url', 'https://x.io', '--limit', '5', '--pacing', 'even'],
      /invalid --pacing: expected a venue budgeted per market \(xetra\), got "binance"/,
    ],
    [['connectors', 'pause', 'nosuch'], /invalid venue: expected an existing connector/],
    [['jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '7m'], /invalid --timeframe: expected one of 1m, 3m/],
    [['jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT'], /invalid --timeframe/],
    [['jobs', 'add', 'binance', 'candles', 'BTC/USDT', '--timeframe', '1m'], /invalid type: expected one of ohlcv/],
    [['jobs', 'add', 'binance', 'ohlcv', 'BTC USDT', '--timeframe', '1m'], /invalid symbol/],
    [['jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m', '--since', 'yesterday'], /invalid --since: expected an ISO date/],
    [['jobs', 'add', 'nosuch', 'ohlcv', 'BTC/USDT', '--timeframe', '1m'], /invalid venue: expected an existing connector/],
    [['jobs', 'show', 'binance:BTC/USDT'], /invalid jobId/],
    [['jobs', 'add', 'binance', 'options', 'BTC/USDT'], /invalid type: expected a job type binance supports \(ohlcv, trades, book, discovery\), got "options"/],
    [['jobs', 'add', 'binance', 'files', 'DETR'], /invalid type: expected a job type binance supports/],
  ];

  it('rejects bad arguments with one line naming the argument, and changes nothing', async () => {
    await cli('connectors', 'upsert', 'binance', '--base-url', 'https://api.binance.com', '--limit', '6000');
    const snapshot = async () => (await cli('connectors', 'list', '--json')).stdout + (await cli('jobs', 'list', '--json')).stdout;
    const before = await snapshot();
    // Three at a time: each is refused before it writes anything.
    const results = await inBatches(badInvocations, 3, async ([args, message]) => ({ args, message, r: await cli(...args) }));
    for (const { args, message, r } of results) {
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(await snapshot()).toBe(before);
    // One CLI process per bad invocation (34 with the upsert and snapshots): up to 2 s each on a
    // loaded 2-core machine, past the suite's 60 s default once the cooldown flags were added.
  }, 240_000);
});
