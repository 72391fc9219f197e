import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UnrecoverableError, Worker } from 'bullmq';
import { createRedisConnection } from '@tickfleet/queues';
import { repoRoot, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import type { DashboardServer } from '../src/index.js';
import { BOARD_ACTIONS } from '../src/internal/action-guard.js';
import { TOKEN_COOKIE } from '../src/internal/dashboard-auth.js';
import { connector, liveUnits, openTestFleet, startDashboard, type TestFleet } from './fleet-fixture.js';

/**
 * Security of the board's actions: what a valid token can do with --allow-actions is held to the
 * fleet's invariants (connector cap, freezes, owed units), and bad credentials are a 401, never a
 * 500. Every check reads the resulting state back from Redis, not just the status code.
 */

let redis: TestRedis;
let dir: TempDir;
let fleet: TestFleet;
let server: DashboardServer;
const TOKEN = 's3cret';
const auth = { authorization: `Bearer ${TOKEN}` };
const q = (venue: string): string => `/queues/api/queues/${encodeURIComponent(`{${venue}}`)}`;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  dir = tempDir();
  fleet = await openTestFleet(redis.url, redis.namespace(), dir, Date.now());
  await fleet.store.connectors.upsert(connector('binance', 1200, { maxInflight: 4 }));
  await fleet.queues.enqueue(liveUnits('binance', 'BTC/USDT', 3, fleet.now));
  await fleet.queues.setGlobalConcurrency('binance', 4);
  server = await startDashboard(fleet, { allowActions: true, credentials: { token: TOKEN } });
});
afterEach(async () => {
  await server.stop();
  await fleet.close();
  dir.remove();
});

async function put(path: string, body?: unknown): Promise<{ status: number; body: { error?: string; expected?: string } }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'PUT',
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { error?: string; expected?: string }) : {} };
}

describe('dashboard actions with a token', () => {
  it('answers a malformed token cookie with 401, not 500', async () => {
    for (const cookie of [`${TOKEN_COOKIE}=%zz`, `${TOKEN_COOKIE}=%E0%A4%A`, `${TOKEN_COOKIE}=%`]) {
      const res = await fetch(`${server.url}/api/status`, { headers: { cookie } });
      expect(res.status).toBe(401);
    }
    // A well-formed cookie with the token still signs in.
    expect((await fetch(`${server.url}/api/status`, { headers: { cookie: `${TOKEN_COOKIE}=${TOKEN}` } })).status).toBe(200);
  });

  it("never sets a queue's concurrency above the connector cap, nor removes it", async () => {
    for (const concurrency of [50, 5, 0, -1, 2.5, '3']) {
      const res = await put(`${q('binance')}/concurrency`, { concurrency });
      expect(res.status).toBe(422);
      expect(res.body.expected).toContain("binance's connector cap 4");
      expect(await fleet.queues.globalConcurrency('binance')).toBe(4);
    }
    const ok = await put(`${q('binance')}/concurrency`, { concurrency: 2 });
    expect(ok.status).toBeLessThan(300);
    expect(await fleet.queues.globalConcurrency('binance')).toBe(2);
  });

  it("never lifts a venue's freeze (a 418 ban) nor the limiter it relies on", async () => {
    const until = Date.now() + 120_000;
    await fleet.control.freeze('binance', until, '418');
    expect(await fleet.queues.frozenForMs('binance')).toBeGreaterThan(60_000);

    const release = await put(`${q('binance')}/rate-limit/release`);
    expect(release.status).toBe(403);
    expect(release.body.expected).toMatch(/ends on its own/);
    const unset = await put(`${q('binance')}/rate-limit`, { max: null });
    expect(unset.status).toBe(403);
    const obliterate = await put(`${q('binance')}/obliterate`);
    expect(obliterate.status).toBe(403);

    expect(await fleet.queues.frozenForMs('binance')).toBeGreaterThan(60_000);
    expect(await fleet.queues.queue('binance').getGlobalRateLimit()).not.toBeNull();
    expect((await fleet.control.freezeOf('binance'))?.cause).toBe('418');
    expect(await fleet.queues.globalConcurrency('binance')).toBe(4);
  });

  it('keeps queued units: empty, add, update-data and cleaning a waiting unit are refused', async () => {
    const before = await fleet.queues.counts('binance');
    const waiting = (await fleet.queues.queue('binance').getJobs(['waiting', 'prioritized'], 0, 0))[0]!;
    expect((await put(`${q('binance')}/empty`)).status).toBe(403);
    const add = await fetch(`${server.url}${q('binance')}/add`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', data: {} }),
    });
    expect(add.status).toBe(403);
    const update = await fetch(`${server.url}${q('binance')}/${encodeURIComponent(waiting.id!)}/update-data`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"data":{}}',
    });
    expect(update.status).toBe(403);
    const clean = await put(`${q('binance')}/${encodeURIComponent(waiting.id!)}/clean`);
    expect(clean.status).toBe(403);
    expect(clean.body.expected).toMatch(/owed work/);
    expect(await fleet.queues.counts('binance')).toEqual(before);
    expect(await fleet.queues.queue('binance').getJobState(waiting.id!)).toBe(waiting.priority ? 'prioritized' : 'waiting');
  });

  it('still allows the listed actions: cleaning a failed unit removes it', async () => {
    const connection = createRedisConnection(redis.url);
    const worker = new Worker(fleet.queues.queue('binance').name, null, { connection, prefix: fleet.prefix, autorun: false });
    let failedId: string;
    try {
      const job = await worker.getNextJob('t');
      failedId = job!.id!;
      await job!.moveToFailed(new UnrecoverableError('venue said no'), 't', false);
    } finally {
      await worker.close();
      await connection.quit();
    }
    const res = await put(`${q('binance')}/${encodeURIComponent(failedId)}/clean`);
    expect(res.status).toBeLessThan(300);
    expect(await fleet.queues.queue('binance').getJobState(failedId)).toBe('unknown');
  });

  it('docs/dashboard.md lists every action a token allows', () => {
    const doc = readFileSync(join(repoRoot(), 'docs', 'dashboard.md'), 'utf8');
    for (const a of BOARD_ACTIONS) expect(doc).toContain(a.action);
  });
});
