import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Clock } from '@tickfleet/core';
import { repoRoot, tempDir, type TempDir } from '@tickfleet/testkit';
import { CLOCK_SKEW_TOLERANCE_MS, openStore } from '../src/index.js';

/**
 * Budgets under a skewed clock on one worker. SQLite: 4 processes share one store; one runs its
 * clock ahead of the host's (2 min, then 1 h) for its first 1.5 s and stops, the 3 others keep
 * hammering. Before the fix the budget's window start only moved forward with the fast clock, so
 * the others decided at the same stored instant again and again (the window never ended) and were
 * told to come back in 2 min (or 1 h): the venue idled for the length of the skew.
 */

const FIXTURE = join(repoRoot(), 'packages', 'store', 'test', 'fixtures', 'skewed-hammer.ts');
const LIMIT = 50;
const PERIOD_MS = 1000;

interface Line {
  t: string;
  [k: string]: unknown;
}

function runChild(args: string[]): { lines: Line[]; ready: Promise<void>; go(): void; done: Promise<void>; kill(): void } {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], {
    cwd: repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Line[] = [];
  let buf = '';
  let stderr = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  proc.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as Line;
      buf = buf.slice(nl + 1);
      if (line.t === 'ready') onReady();
      else lines.push(line);
    }
  });
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<void>((resolve, reject) =>
    proc.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`skewed-hammer exited ${code}: ${stderr}`)))),
  );
  done.catch(() => onReady());
  return { lines, ready, go: () => proc.stdin.end('go\n'), done, kill: () => proc.kill('SIGKILL') };
}

describe('budget under a skewed worker clock (SQLite, 4 processes)', () => {
  let dir: TempDir;
  beforeAll(() => {
    dir = tempDir('tickfleet-skew-');
  });
  afterAll(() => dir.remove());

  it.each([
    ['2 minutes', 120_000],
    ['1 hour', 3_600_000],
  ])(
    'a clock %s ahead moves the timeline once; the others follow it, keep spending and are never told to wait longer than a window',
    async (_label, skewMs) => {
      const url = dir.sqliteUrl(`skew-${skewMs}.db`);
      const store = await openStore(url);
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.example.com', rateLimit: { limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 } });
      await store.close();
      const fast = runChild([url, 'binance', '1500', '3', String(skewMs)]);
      const slow = [0, 1, 2].map(() => runChild([url, 'binance', '9000', '3', '0']));
      const all = [fast, ...slow];
      try {
        await Promise.all(all.map((c) => c.ready));
        for (const c of all) c.go();
        await Promise.all(all.map((c) => c.done));
      } finally {
        for (const c of all) c.kill();
      }
      const grants = all.flatMap((c) => c.lines.filter((l) => l.t === 'grant')) as unknown as Array<{ windowStartMs: number; weight: number; realMs: number }>;

      // One timeline: no window of it was charged over the limit.
      const perWindow = new Map<number, number>();
      for (const g of grants) perWindow.set(g.windowStartMs, (perWindow.get(g.windowStartMs) ?? 0) + g.weight);
      expect([...perWindow].filter(([, w]) => w > LIMIT)).toEqual([]);

      // The slow processes were corrected onto the fast clock's timeline and told so.
      const fastEnd = Number(fast.lines.find((l) => l.t === 'end')?.at);
      for (const c of slow) {
        const end = c.lines.find((l) => l.t === 'end')!;
        expect(Math.abs(Number(end.clockOffsetMs) - skewMs)).toBeLessThanOrEqual(CLOCK_SKEW_TOLERANCE_MS);
        // A refusal never asks for more than one window's wait on the caller's own clock.
        expect(Number(end.maxWaitMs)).toBeLessThanOrEqual(PERIOD_MS + 1500);
      }

      // After the fast process left, the timeline kept moving with the others: a new window every
      // period, each well used (the bug left one window that never ended).
      const after = grants.filter((g) => g.realMs > fastEnd + PERIOD_MS);
      const windows = [...new Set(after.map((g) => g.windowStartMs))].sort((a, b) => a - b).slice(1, -1);
      expect(windows.length).toBeGreaterThanOrEqual(3);
      const underused = windows.map((ws) => [ws, perWindow.get(ws) ?? 0] as const).filter(([, w]) => w < 0.8 * LIMIT);
      expect(underused).toEqual([]);
    },
    60_000,
  );
});

describe('budget under skewed client clocks (MongoDB: decisions on server time)', () => {
  it('clients an hour apart share the server windows and get retry times on their own clocks', async () => {
    const { startMongoWire } = await import('@tickfleet/mongo-wire');
    const server = await startMongoWire();
    const prefix = `p${randomUUID().slice(0, 8)}_`;
    const skewed = (offsetMs: number): Clock => ({ now: () => Date.now() + offsetMs, monotonic: () => performance.now() });
    const ahead = await openStore(server.url, { collectionPrefix: prefix, clock: skewed(3_600_000) });
    const behind = await openStore(server.url, { collectionPrefix: prefix, clock: skewed(-3_600_000) });
    try {
      // A long window, so both grants and the refusal fall in one server window.
      await ahead.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.example.com', rateLimit: { limit: 5, periodMs: 3_600_000, headroom: 1 } });
      const a = await ahead.budgets.acquire('binance', 3);
      const b = await behind.budgets.acquire('binance', 2);
      expect(a).toMatchObject({ ok: true, used: 3 });
      expect(b).toMatchObject({ ok: true, used: 5 });
      // Both were charged in the server's window (its clock is the host's here), not their own.
      const serverWindow = Math.floor(Date.now() / 3_600_000) * 3_600_000;
      expect(a.ok && a.windowStartMs).toBe(b.ok && b.windowStartMs);
      expect([serverWindow, serverWindow - 3_600_000]).toContain(a.ok && a.windowStartMs);
      expect(Math.abs((a.clockOffsetMs ?? 0) + 3_600_000)).toBeLessThan(CLOCK_SKEW_TOLERANCE_MS);
      expect(Math.abs((b.clockOffsetMs ?? 0) - 3_600_000)).toBeLessThan(CLOCK_SKEW_TOLERANCE_MS);
      // Refused: the retry time is the server window's end, translated onto each caller's clock.
      for (const [store, offset] of [
        [ahead, 3_600_000],
        [behind, -3_600_000],
      ] as const) {
        const r = await store.budgets.acquire('binance', 1);
        expect(r).toMatchObject({ ok: false, reason: 'exhausted' });
        const waitMs = !r.ok ? r.retryAtMs - (Date.now() + offset) : NaN;
        expect(waitMs).toBeGreaterThan(-CLOCK_SKEW_TOLERANCE_MS);
        expect(waitMs).toBeLessThanOrEqual(3_600_000 + CLOCK_SKEW_TOLERANCE_MS);
      }
    } finally {
      await ahead.close();
      await behind.close();
      await server.stop();
    }
  }, 30_000);
});
