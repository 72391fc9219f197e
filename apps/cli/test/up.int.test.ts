import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { DEFAULT_LIMITLESS_MARKETS, DEFAULT_SEED, limitlessBookSlugs, limitlessMarkets } from '@tickfleet/mock-venue';
import { runCli, spawnCli, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';

const DAY = 86_400_000;

/** The parts of `tickfleet status --json` this test reads. */
interface DemoStatus {
  venues: Array<{ venue: string; cursorLag: { maxMs: number | null } }>;
  streams: Array<{
    name: string;
    venue: string;
    holder: { worker: string } | null;
    live: { messages: number; gapsHealed: number } | null;
    unhealedGaps: number;
  }>;
}

/** The README's first quick-start command: the whole fleet from nothing, data within seconds, Ctrl-C stops all. */
describe('tickfleet up --demo', () => {
  let dir: TempDir;
  beforeAll(() => {
    dir = tempDir('tickfleet-up-');
  });
  afterAll(() => dir.remove());

  it('starts redis, emulations, scheduler, workers and dashboard; candles arrive; SIGINT stops everything', async () => {
    const up = spawnCli(['up', '--demo', '--workers', '2', '--dashboard-port', '0'], {
      cwd: dir.path,
      env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined, LOG_LEVEL: 'info' },
    });
    let out = '';
    up.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    up.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => up.once('exit', (code) => r(code)));
    try {
      await waitFor(() => out.includes('tickfleet is up') || up.exitCode !== null, 'tickfleet is up', { timeoutMs: 60_000 });
      expect(out).toContain('tickfleet is up');
      // The banner says the demo's data is made up.
      expect(out).toMatch(/emulations: \S+ +\(synthetic data, not real prices/);
      const fleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as {
        redisUrl: string;
        dashboardUrl: string;
        mockVenueUrl: string;
      };
      const fleetStatus = async (): Promise<DemoStatus> => {
        const r = await runCli(['status', '--json'], { cwd: dir.path, env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined } });
        expect(r.code).toBe(0);
        return JSON.parse(r.stdout) as DemoStatus;
      };

      const count = async (): Promise<number> => {
        const r = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--json'], {
          cwd: dir.path,
          env: { TICKFLEET_SINK_URL: undefined },
        });
        return r.code === 0 ? (JSON.parse(r.stdout) as { count: number }).count : 0;
      };
      // The demo job starts 6 hours back: ~360 closed 1m candles arrive in the first units.
      await waitFor(async () => (await count()) >= 300, 'demo candles in the sink', { timeoutMs: 60_000, intervalMs: 1000 });

      // Limitless discovery feeds its book polling: snapshots of a discovered market arrive.
      const slug = limitlessBookSlugs(limitlessMarkets(DEFAULT_SEED, DEFAULT_LIMITLESS_MARKETS))[0]!;
      const limitlessBooks = async (): Promise<number> => {
        const r = await runCli(['data', 'export', 'limitless', slug, '--channel', 'book', '--format', 'jsonl'], {
          cwd: dir.path,
          env: { TICKFLEET_SINK_URL: undefined },
        });
        return r.code === 0 ? r.stdout.split('\n').filter((l) => l.includes('"venue":"limitless"')).length : 0;
      };
      await waitFor(async () => (await limitlessBooks()) >= 1, 'demo Limitless books in the sink', { timeoutMs: 60_000, intervalMs: 1000 });

      // Polygon trades in US sessions: the demo collects its day bars, which exist whenever the demo
      // starts, and holds every session the trading calendar expects between the first and the last.
      const polygonDays = async (): Promise<{ count: number; expected: number } | undefined> => {
        const r = await runCli(['data', 'count', 'polygon', 'AAPL', '--timeframe', '1d', '--json'], { cwd: dir.path, env: { TICKFLEET_SINK_URL: undefined } });
        const c = r.code === 0 ? (JSON.parse(r.stdout) as { count: number; expected: number }) : undefined;
        return c && c.count > 0 ? c : undefined;
      };
      const days = await waitFor(polygonDays, 'demo Polygon day bars in the sink', { timeoutMs: 60_000, intervalMs: 1000 });
      expect(days.count).toBe(days.expected);
      // At 5 requests a minute (one a session day) the demo's Polygon job starts a few days back, not
      // weeks: its cursor is days behind the clock, and it is caught up (lag under a day) soon after.
      const jobs = await runCli(['jobs', 'list', '--json'], { cwd: dir.path, env: { TICKFLEET_STORE_URL: undefined } });
      const polygonJob = (JSON.parse(jobs.stdout) as Array<{ id: string; cursor: number | null }>).find((j) => j.id === 'polygon:AAPL:1d:ohlcv')!;
      expect(Date.now() - polygonJob.cursor!).toBeLessThan(7 * DAY);
      await waitFor(
        async () => (await fleetStatus()).venues.find((v) => v.venue === 'polygon')!.cursorLag.maxMs! < DAY,
        'the demo Polygon job caught up (cursor lag under a day)',
        { timeoutMs: 120_000, intervalMs: 2000 },
      );

      // Alpaca day bars (per-day units), Finnhub option chains over a universe, FRED's Treasury curve, Coinbase's polled trades.
      const records = async (args: string[]): Promise<number> => {
        const r = await runCli(['data', 'count', ...args, '--json'], { cwd: dir.path, env: { TICKFLEET_SINK_URL: undefined } });
        if (r.code !== 0) return 0;
        const c = JSON.parse(r.stdout) as { count?: number; records?: number };
        return c.count ?? c.records ?? 0;
      };
      for (const [what, args] of [
        ['Alpaca day bars', ['alpaca', 'AAPL', '--timeframe', '1d']],
        ['Finnhub option contracts', ['finnhub', '--channel', 'options']],
        ['FRED Treasury yields', ['fred', 'DGS10', '--channel', 'series']],
        ['Coinbase polled trades', ['coinbase', 'BTC/USD', '--channel', 'trades']],
      ] as const) {
        await waitFor(async () => (await records([...args])) > 0, `demo ${what} in the sink`, { timeoutMs: 60_000, intervalMs: 1000 });
      }

      // The WebSocket half: a Binance and a Kraken stream, each held by a worker and counting
      // messages; the emulation drops messages (ground truth: its stats), Binance's trade gaps are
      // healed (stored `healed` stream events), Binance's from aggTrades, Kraken's from its REST Trades.
      const mockStats = async (): Promise<{ streams: Record<'binance' | 'kraken', { gapsInjected: number }> }> =>
        (await (await fetch(`${fleet.mockVenueUrl}/_mock/stats`)).json()) as { streams: Record<'binance' | 'kraken', { gapsInjected: number }> };
      const streams = await waitFor(
        async () => {
          const list = (await fleetStatus()).streams;
          const live = (name: string) => list.find((s) => s.name === name)?.live;
          const binance = live('demo-binance');
          const kraken = list.find((s) => s.name === 'demo-kraken');
          return binance && binance.messages > 0 && binance.gapsHealed > 0 && kraken?.live && kraken.live.messages > 0 && kraken.live.gapsHealed > 0
            ? list
            : undefined;
        },
        'demo streams with messages and healed gaps',
        { timeoutMs: 90_000, intervalMs: 2000 },
      );
      expect(streams.map((s) => [s.name, s.venue, s.holder !== null])).toEqual([
        ['demo-binance', 'binance', true],
        ['demo-kraken', 'kraken', true],
      ]);
      const injected = (await mockStats()).streams;
      expect(injected.binance.gapsInjected).toBeGreaterThan(0);
      expect(injected.kraken.gapsInjected).toBeGreaterThan(0);
      const cliData = async (args: string[]): Promise<string> => {
        const r = await runCli(['data', ...args], { cwd: dir.path, env: { TICKFLEET_SINK_URL: undefined } });
        expect(r.stderr).toBe('');
        return r.stdout;
      };
      for (const venue of ['binance', 'kraken']) {
        for (const channel of ['trades', 'book']) {
          expect((JSON.parse(await cliData(['count', venue, '--channel', channel, '--json'])) as { count: number }).count).toBeGreaterThan(0);
        }
      }
      for (const venue of ['binance', 'kraken']) {
        const events = (await cliData(['export', venue, '--channel', 'stream_events', '--format', 'jsonl'])).split('\n').filter((l) => l !== '');
        expect(events.map((l) => (JSON.parse(l) as { payload: { event: string } }).payload.event)).toContain('healed');
      }
      // Kraken and Coinbase candles through the CCXT engine
      for (const venue of ['kraken', 'coinbase']) {
        expect((JSON.parse(await cliData(['count', venue, 'BTC/USD', '--timeframe', '1m', '--json'])) as { count: number }).count).toBeGreaterThan(0);
      }

      const status = (await (await fetch(`${fleet.dashboardUrl}/api/status`)).json()) as { venues: Array<{ venue: string }> };
      expect(status.venues.map((v) => v.venue).sort()).toEqual([
        'alpaca',
        'binance',
        'coinbase',
        'finnhub',
        'fred',
        'kraken',
        'limitless',
        'polygon',
        'polymarket',
        'xetra',
      ]);

      const cliStatus = await runCli(['status', '--json'], { cwd: dir.path, env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined } });
      expect(cliStatus.code).toBe(0);

      up.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(existsSync(join(dir.path, '.tickfleet/fleet.json'))).toBe(false);
      const port = Number(new URL(fleet.redisUrl).port);
      const redisGone = await new Promise<boolean>((resolve) => {
        const s = createConnection({ port, host: '127.0.0.1' });
        s.once('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.once('error', () => resolve(true));
      });
      expect(redisGone).toBe(true);
      const logs = ['scheduler', 'worker-0', 'worker-1'].map((n) => readFileSync(join(dir.path, `.tickfleet/logs/${n}.log`), 'utf8'));
      for (const log of logs) expect(log).toContain('stopped cleanly');
      // The terminal shows the banner; every role's JSON log goes to its file.
      expect(readFileSync(join(dir.path, '.tickfleet/logs/dashboard.log'), 'utf8')).toContain('dashboard ready');
      expect(out).not.toContain('"level"');
    } finally {
      if (up.exitCode === null) up.kill('SIGKILL');
    }
  }, 150_000);
});
