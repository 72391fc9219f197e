import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { startMongoWire, type MongoWireHandle } from '@tickfleet/mongo-wire';
import { openStore } from '@tickfleet/store';
import { freePort, repoRoot, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';

/**
 * The budget across a network and a partition, counted where it matters: at the venue emulation.
 * Four processes (three request loops each) reach the shared budget (the Redis budget, or the
 * MongoDB store's budget on the wire test server) each through its own delaying TCP proxy
 * (`scripts/hosts/delay-proxy.ts`: 10 ms each way), and send Binance requests of weight 1 and 5 to
 * the emulation (30-120 ms service time), whose own count per clock-aligned second is the ground
 * truth. Limit 50 per 1 s window. Midway, the first process's proxy stops forwarding for 4 s
 * (SIGSTOP: its connections stay open and go silent, as a cut link does) while the others keep
 * the budget: that process may spend only the lease it held, then nothing, and no window of the
 * venue may see more than the limit.
 */

const HAMMER = join(repoRoot(), 'packages', 'budget', 'test', 'fixtures', 'lease-hammer.ts');
const DELAY_PROXY = join(repoRoot(), 'scripts', 'hosts', 'delay-proxy.ts');
const LIMIT = 50;
const PERIOD_MS = 1000;
const DURATION_MS = 12_000;
const PROCESSES = 4;
const CUT_AFTER_MS = 4000;
const CUT_FOR_MS = 4000;

interface Done {
  sent: number;
  statuses: Record<string, number>;
  sentPerWindow: Record<string, number>;
}

/** Spawns a script under tsx; resolves once its stdout printed a line starting with `readyLine`. */
function startScript(
  path: string,
  args: string[],
  readyLine: string,
): { proc: ChildProcess; ready: Promise<void>; lines: Array<Record<string, unknown>>; closed: Promise<number | null> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', path, ...args], {
    cwd: repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  let stderr = '';
  let onReady: () => void = () => undefined;
  let onFail: (err: Error) => void = () => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith(readyLine)) onReady();
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((resolve) =>
    proc.once('close', (code) => {
      onFail(new Error(`${path} exited ${code} before it was ready: ${stderr}`));
      resolve(code);
    }),
  );
  return { proc, ready, lines, closed };
}

/** A delay proxy from a free local port to `targetPort`; resolves its port once it listens. */
async function startProxy(targetPort: number): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const p = startScript(DELAY_PROXY, ['--delay-ms', '10', `127.0.0.1:${port}=127.0.0.1:${targetPort}`], 'delay-proxy listening');
  await p.ready;
  return { proc: p.proc, port };
}

describe('budget behind a 20 ms round trip, one process cut off from it, counted at the venue emulation', () => {
  let redis: TestRedis;
  let mongo: MongoWireHandle;
  let mock: MockVenue;
  let dir: TempDir;
  beforeAll(async () => {
    dir = tempDir('tickfleet-budget-partition-');
    redis = await startRedis();
    mongo = await startMongoWire();
    // Over-limit requests are answered 429 and counted; no ban, so a breach cannot end the run early.
    mock = await startMockVenue({
      scenario: { venues: { binance: { latencyMs: { min: 30, max: 120 }, limit: { weight: LIMIT, windowMs: PERIOD_MS, banAfter: 1_000_000 } } } },
    });
  });
  afterAll(async () => {
    await mock.stop();
    await mongo.stop();
    await redis.stop();
    dir.remove();
  });

  it.each([
    ['the Redis budget', 'redis'],
    ['the MongoDB store budget', 'store'],
  ] as const)(
    '%s: no window over the limit; the cut-off process spends only its lease',
    async (_name, mode) => {
      const target = mode === 'redis' ? Number(new URL(redis.url).port) : mongo.port;
      const proxies = await Promise.all(Array.from({ length: PROCESSES }, () => startProxy(target)));
      const prefix = redis.namespace();
      const db = `partition${Date.now()}`;
      const sqliteUrl = dir.sqliteUrl(`${prefix}.db`);
      const setupUrl = mode === 'redis' ? sqliteUrl : `${mongo.url}${db}`;
      const setup = await openStore(setupUrl);
      await setup.connectors.upsert({ venue: 'binance', baseUrl: mock.baseUrl('binance'), rateLimit: { limit: LIMIT, periodMs: PERIOD_MS, headroom: 1 } });
      await setup.close();
      const children = proxies.map((proxy) => {
        const via = `127.0.0.1:${proxy.port}`;
        const budgetUrl = mode === 'redis' ? `redis://${via}` : '';
        const storeUrl = mode === 'redis' ? sqliteUrl : `mongodb://${via}/${db}?directConnection=true`;
        return startScript(
          HAMMER,
          [mode, budgetUrl, storeUrl, redis.url, prefix, mock.baseUrl('binance'), String(PERIOD_MS), String(DURATION_MS), '3'],
          '{"t":"ready"}',
        );
      });
      try {
        await Promise.all(children.map((c) => c.ready));
        mock.reset();
        const startedAt = Date.now();
        for (const c of children) c.proc.stdin?.end('go\n');
        await new Promise((r) => setTimeout(r, CUT_AFTER_MS));
        const cutAt = Date.now();
        proxies[0]!.proc.kill('SIGSTOP');
        await new Promise((r) => setTimeout(r, CUT_FOR_MS));
        const healedAt = Date.now();
        proxies[0]!.proc.kill('SIGCONT');
        const codes = await Promise.all(children.map((c) => c.closed));
        expect(codes).toEqual(children.map(() => 0));
        const done = children.map((c) => c.lines.find((l) => l.t === 'done') as unknown as Done);
        const endedAt = Date.now();

        const stats = mock.stats().venues.binance;
        expect(stats.overLimitRequests).toBe(0);
        expect(stats.responses429).toBe(0);
        expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
        expect(stats.windows.filter((w) => w.weight > LIMIT)).toEqual([]);
        expect(done.every((d) => d.sent > 0)).toBe(true);

        // The cut-off process: nothing in the windows after the one it was cut in, until it was healed.
        const cutWindow = Math.floor(cutAt / PERIOD_MS) * PERIOD_MS;
        const dark = Object.entries(done[0]!.sentPerWindow).filter(([ws]) => Number(ws) > cutWindow && Number(ws) + PERIOD_MS <= healedAt);
        // Whole windows between the cut window and the heal (the cut lasted 4 s: at least 2 of them).
        const darkWindows = Math.floor(healedAt / PERIOD_MS) - 1 - cutWindow / PERIOD_MS;
        expect(darkWindows).toBeGreaterThanOrEqual(2);
        expect(dark.filter(([, weight]) => weight > 0)).toEqual([]);

        const full = stats.windows.filter((w) => w.startMs >= startedAt && w.startMs + PERIOD_MS <= Math.min(endedAt, startedAt + DURATION_MS));
        const mean = full.reduce((s, w) => s + w.weight, 0) / Math.max(1, full.length);
        process.stdout.write(
          `\n${mode} budget via 10 ms proxies, 4 processes x 3 loops, limit ${LIMIT}/${PERIOD_MS} ms, process 1 cut ${CUT_FOR_MS / 1000} s: ` +
            `${full.length} full windows, max ${stats.maxWindowWeight}, mean ${mean.toFixed(1)} (${((100 * mean) / LIMIT).toFixed(0)}% of the limit), ` +
            `over the limit ${stats.overLimitRequests}; process 1 sent ${done[0]!.sentPerWindow[String(cutWindow)] ?? 0} in the window it was cut in, ` +
            `${dark.reduce((s, [, w]) => s + w, 0)} in the ${darkWindows} windows after it until healed\n`,
        );
      } finally {
        for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
        for (const p of proxies) {
          p.proc.kill('SIGCONT');
          p.proc.kill('SIGTERM');
        }
      }
    },
    120_000,
  );
});
