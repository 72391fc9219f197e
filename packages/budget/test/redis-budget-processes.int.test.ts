import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { openStore } from '@tickfleet/store';
import { repoRoot, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';

/**
 * Redis budget safety across OS processes, counted where it matters: at the venue. Four processes
 * (three request loops each) send Binance requests of weight 1 and 5 to the emulation, each
 * spent first through the worker's BudgetGate on one Redis budget. The emulation counts the weight
 * it accepts per clock-aligned window, refuses what goes over (429) and records over-limit
 * arrivals: that is what a venue sees, whatever the budget itself believed it granted.
 */

const FIXTURE = join(repoRoot(), 'packages', 'budget', 'test', 'fixtures', 'redis-budget-hammer.ts');
const LIMIT = 200;
/**
 * 10 s windows, as the fleet's own safety test: the gate holds requests in the last 500 ms of a
 * window, room for a request's trip to the venue on a loaded 2-core machine (with 4 s windows and
 * a 200 ms guard, one run in four at a load average of 16 had 2 requests over the limit).
 */
const PERIOD_MS = 10_000;
const DURATION_MS = 32_000;

interface Done {
  sent: number;
  statuses: Record<string, number>;
}

function startChild(args: string[]): { proc: ChildProcess; ready: Promise<void>; done: Promise<Done> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], {
    cwd: repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let buf = '';
  let stderr = '';
  let result: Done | undefined;
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as { t: string } & Done;
      buf = buf.slice(nl + 1);
      if (line.t === 'ready') onReady();
      if (line.t === 'done') result = line;
    }
  });
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Done>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`redis-budget-hammer exited ${code}: ${stderr}`))));
  });
  // A child that dies before it is ready must fail the test, not hang it.
  done.catch(() => onReady());
  return { proc, ready, done };
}

describe('Redis budget safety across 4 processes, counted at the venue emulation', () => {
  let redis: TestRedis;
  let mock: MockVenue;
  let dir: TempDir;
  beforeAll(async () => {
    dir = tempDir('tickfleet-redis-budget-procs-');
    redis = await startRedis();
    // Over-limit requests are answered 429 and counted; no ban, so a breach cannot end the run early.
    mock = await startMockVenue({ scenario: { venues: { binance: { limit: { weight: LIMIT, windowMs: PERIOD_MS, banAfter: 1_000_000 } } } } });
  });
  afterAll(async () => {
    await mock.stop();
    await redis.stop();
    dir.remove();
  });

  it('never lets the venue see more than its limit in one clock window, and uses most of each full window', async () => {
    const storeUrl = dir.sqliteUrl('state.db');
    const store = await openStore(storeUrl);
    await store.connectors.upsert({ venue: 'binance', baseUrl: mock.baseUrl('binance'), rateLimit: { limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 } });
    await store.close();
    const prefix = redis.namespace();
    const children = Array.from({ length: 4 }, () =>
      startChild(['aligned', redis.url, storeUrl, prefix, mock.baseUrl('binance'), String(LIMIT), String(PERIOD_MS), String(DURATION_MS), '3']),
    );
    let results: Done[];
    try {
      await Promise.all(children.map((c) => c.ready));
      mock.reset();
      const startedAt = Date.now();
      for (const c of children) c.proc.stdin?.end('go\n');
      results = await Promise.all(children.map((c) => c.done));
      const stats = mock.stats().venues.binance;
      expect(stats.overLimitRequests).toBe(0);
      expect(stats.responses429).toBe(0);
      expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
      expect(stats.windows.every((w) => w.weight <= LIMIT)).toBe(true);
      // The budget was really contended: every process sent requests, and the windows wholly
      // inside the run got at least half the allowance (the guard and weight-5 requests leave some).
      expect(results.every((r) => r.sent > 0)).toBe(true);
      const full = stats.windows.filter((w) => w.startMs >= startedAt && w.startMs + PERIOD_MS <= startedAt + DURATION_MS);
      expect(full.length).toBeGreaterThanOrEqual(2);
      expect(full.filter((w) => w.weight < 0.5 * LIMIT)).toEqual([]);
    } finally {
      for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
  }, 120_000);
});
