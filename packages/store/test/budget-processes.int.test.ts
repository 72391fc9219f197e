import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { repoRoot, tempDir, type TempDir } from '@tickfleet/testkit';
import { openStore } from '../src/index.js';

/**
 * Budget safety across OS processes: 4 processes hammer `acquire` on one store; every grant the
 * store hands out is printed with the store's decision time, and the union is checked against the
 * policy. A venue counts the same way, so these are the numbers a venue would see.
 */

const FIXTURE = join(repoRoot(), 'packages', 'store', 'test', 'fixtures', 'store-hammer.ts');
const LIMIT = 50;
const PERIOD_MS = 1000;
const DURATION_MS = 6500;

interface Grant {
  atMs: number;
  windowStartMs: number | null;
  weight: number;
}
interface Run {
  grants: Grant[];
  /** Latest time any process began hammering, earliest time any stopped: all 4 compete in between. */
  allBeganAt: number;
  firstEndedAt: number;
}

interface Child {
  proc: ChildProcess;
  lines: Record<string, unknown>[];
  ready: Promise<void>;
  done: Promise<void>;
}

function startChild(args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], {
    cwd: repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  let stderr = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      if (line.t === 'ready') onReady();
      else lines.push(line);
    }
  });
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<void>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`store-hammer exited ${code}: ${stderr}`))));
  });
  // A child that dies before it is ready must fail the test, not hang it.
  done.catch(() => onReady());
  return { proc, lines, ready, done };
}

async function runProcesses(n: number, args: string[]): Promise<Child[]> {
  const children = Array.from({ length: n }, () => startChild(args));
  try {
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.proc.stdin?.end('go\n');
    await Promise.all(children.map((c) => c.done));
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
  }
  return children;
}

async function hammer(url: string, venue: string, prefix = ''): Promise<Run> {
  const children = await runProcesses(4, ['acquire', url, venue, String(DURATION_MS), '3', prefix]);
  const all = children.flatMap((c) => c.lines);
  const begins = all.filter((l) => l.t === 'begin').map((l) => Number(l.at));
  const ends = all.filter((l) => l.t === 'end').map((l) => Number(l.at));
  expect(begins).toHaveLength(4);
  expect(ends).toHaveLength(4);
  return {
    grants: all.filter((l) => l.t === 'grant') as unknown as Grant[],
    allBeganAt: Math.max(...begins),
    firstEndedAt: Math.min(...ends),
  };
}

/** No aligned window over the limit; >= 90% of the limit in every window all 4 processes spent fully hammering. */
function checkFixedWindow(run: Run): void {
  const perWindow = new Map<number, number>();
  for (const g of run.grants) {
    expect(g.windowStartMs).toBe(Math.floor(g.atMs / PERIOD_MS) * PERIOD_MS);
    const ws = g.windowStartMs ?? NaN;
    perWindow.set(ws, (perWindow.get(ws) ?? 0) + g.weight);
  }
  const over = [...perWindow].filter(([, w]) => w > LIMIT);
  expect(over).toEqual([]);
  const full = [...perWindow.keys()].filter((ws) => ws >= run.allBeganAt && ws + PERIOD_MS <= run.firstEndedAt).sort((a, b) => a - b);
  expect(full.length).toBeGreaterThanOrEqual(5);
  const underfilled = full.map((ws) => [ws, perWindow.get(ws) ?? 0] as const).filter(([, w]) => w < 0.9 * LIMIT);
  expect(underfilled).toEqual([]);
}

/**
 * GCRA conformance: for any two grants at a <= b, the weight granted in [a, b] is at most
 * limit + (b - a) * limit / periodMs. Also checks the bucket was kept busy (>= 85% of the rate).
 */
function checkGcra(run: Run): void {
  const grants = [...run.grants].sort((x, y) => x.atMs - y.atMs);
  const rate = LIMIT / PERIOD_MS;
  let worst = -Infinity;
  for (let i = 0; i < grants.length; i++) {
    let sum = 0;
    const a = grants[i]?.atMs ?? 0;
    for (let j = i; j < grants.length; j++) {
      const g = grants[j];
      if (!g) continue;
      sum += g.weight;
      worst = Math.max(worst, sum - (LIMIT + (g.atMs - a) * rate));
    }
  }
  expect(worst).toBeLessThanOrEqual(1e-6);
  const spanMs = run.firstEndedAt - run.allBeganAt;
  const inSpan = grants.filter((g) => g.atMs >= run.allBeganAt && g.atMs <= run.firstEndedAt).reduce((s, g) => s + g.weight, 0);
  expect(spanMs).toBeGreaterThan(5 * PERIOD_MS);
  expect(inSpan).toBeGreaterThanOrEqual(0.85 * rate * spanMs);
}

const venueCfg = (venue: string, policy: 'fixed-window' | 'gcra') => ({
  venue,
  baseUrl: 'https://api.example.com',
  rateLimit: { policy, limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 },
});

describe('budget safety across 4 processes (SQLite)', () => {
  let dir: TempDir;
  beforeAll(() => {
    dir = tempDir('tickfleet-budget-');
  });
  afterAll(() => dir.remove());

  it('fixed window: never over 50 per aligned 1 s window, >= 45 granted in each full window', async () => {
    const url = dir.sqliteUrl('fixed.db');
    const store = await openStore(url);
    await store.connectors.upsert(venueCfg('binance', 'fixed-window'));
    await store.close();
    checkFixedWindow(await hammer(url, 'binance'));
  }, 60_000);

  it('gcra: no rolling period gets more than the policy allows', async () => {
    const url = dir.sqliteUrl('gcra.db');
    const store = await openStore(url);
    await store.connectors.upsert(venueCfg('kraken', 'gcra'));
    await store.close();
    checkGcra(await hammer(url, 'kraken'));
  }, 60_000);

  it('two processes claiming due jobs never lease the same job', async () => {
    const url = dir.sqliteUrl('claim.db');
    const store = await openStore(url);
    await store.connectors.upsert(venueCfg('binance', 'fixed-window'));
    for (let i = 0; i < 300; i++) await store.jobs.upsert({ venue: 'binance', symbol: `S${i}/USDT`, type: 'ohlcv', timeframe: '1m', nextRunAt: 0 });
    await store.close();
    const children = await runProcesses(2, ['claim', url, String(Date.now()), '3']);
    const perProcess = children.map((c) => (c.lines.find((l) => l.t === 'claimed')?.ids ?? []) as string[]);
    const all = perProcess.flat();
    expect(all).toHaveLength(300);
    expect(new Set(all).size).toBe(300);
    // both really competed (neither finished before the other started)
    expect(perProcess.every((ids) => ids.length > 0)).toBe(true);
  }, 60_000);
});

describe('budget safety across 4 processes (MongoDB: MONGO_URL or the wire test server)', () => {
  let url = process.env.MONGO_URL ?? '';
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (!url) {
      const { startMongoWire } = await import('@tickfleet/mongo-wire');
      const server = await startMongoWire();
      url = server.url;
      stop = () => server.stop();
    }
  });
  afterAll(async () => {
    await stop?.();
  });

  it('fixed window: never over 50 per aligned 1 s window, >= 45 granted in each full window', async () => {
    const prefix = `p${randomUUID().slice(0, 8)}_`;
    const store = await openStore(url, { collectionPrefix: prefix });
    await store.connectors.upsert(venueCfg('binance', 'fixed-window'));
    await store.close();
    checkFixedWindow(await hammer(url, 'binance', prefix));
  }, 60_000);
});
