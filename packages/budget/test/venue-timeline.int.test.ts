import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { repoRoot, startRedis, type TestRedis } from '@tickfleet/testkit';
import { FleetVenueControl } from '../src/venue-control/fleet-venue-control.js';

/**
 * A worker process whose clock really is 30 s off (libfaketime: its Date.now(), not an injected
 * clock) freezes a venue and starts its order-book cooldown for 20 s by its own clock, and reads a
 * 20 s freeze this process wrote. Each pause must last 20 s for both, within what really passed.
 * Before the venue control followed the fleet's timeline, a worker 30 s ahead froze the venue for
 * 50 s and never saw the other's freeze; one 30 s behind froze nothing.
 */

const FIXTURE = join(repoRoot(), 'packages', 'budget', 'test', 'fixtures', 'skewed-venue-control.ts');
const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
].find((p) => existsSync(p));
const PAUSE_MS = 20_000;
const SKEW_MS = 30_000;
/** What the offset reading and a few round trips may add; the skew is 30 s. */
const TOLERANCE_MS = 500;

interface ChildReport {
  clockMs: number;
  krakenFrozenMs: number;
  offsetMs: number;
}

function runSkewed(skewMs: number, url: string, prefix: string): Promise<ChildReport> {
  if (!LIBFAKETIME) throw new Error('libfaketime is not installed (scripts/setup.sh installs it: apt-get install libfaketime)');
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, url, prefix, String(PAUSE_MS)], {
    cwd: repoRoot(),
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME: `${skewMs > 0 ? '+' : '-'}${Math.abs(skewMs) / 1000}s`,
      // Timers run on the monotonic clock: only the wall clock is off, as on a host with bad time sync.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim()) as ChildReport) : reject(new Error(`skewed-venue-control exited ${code}: ${err}`)),
    );
  });
}

let redis: TestRedis;
let connection: RedisClient;

beforeAll(async () => {
  redis = await startRedis();
  connection = createRedisConnection(redis.url, { blocking: false });
});
afterAll(async () => {
  connection.disconnect();
  await redis.stop();
});

describe.each([
  ['ahead', SKEW_MS],
  ['behind', -SKEW_MS],
])('a worker process whose clock is 30 s %s (libfaketime)', (_label, skewMs) => {
  it('ends no fleet-wide freeze or cooldown early or late', async () => {
    const prefix = redis.namespace();
    const exact = new FleetVenueControl(connection, { prefix, clock: systemClock });
    const before = performance.now();
    await exact.freeze('kraken', Date.now() + PAUSE_MS, 'manual');
    const child = await runSkewed(skewMs, redis.url, prefix);
    const [binanceMs, polymarketMs] = [await exact.frozenForMs('binance'), await exact.bookCooldownMs('polymarket')];
    const passed = performance.now() - before;
    // The skew was real: the child's clock read 30 s off this one's, and it measured that.
    expect(Math.abs(child.clockMs - Date.now() - skewMs)).toBeLessThan(passed + TOLERANCE_MS);
    expect(Math.abs(child.offsetMs + skewMs)).toBeLessThan(TOLERANCE_MS);
    for (const left of [child.krakenFrozenMs, binanceMs, polymarketMs]) {
      expect(left).toBeGreaterThanOrEqual(PAUSE_MS - passed - TOLERANCE_MS);
      expect(left).toBeLessThanOrEqual(PAUSE_MS + TOLERANCE_MS);
    }
  });
});
