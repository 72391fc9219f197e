import { ValidationError } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { startRedis, startRedisCluster, waitFor, type TestRedis } from '@tickfleet/testkit';
import { ConnectAttempts } from './connect-attempts.js';
import { StreamLeases, streamLeaseKeys, type StreamLeasesOptions, type StreamLostReason } from './stream-leases.js';

let redis: TestRedis;
const clients: RedisClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(clients.filter((c) => c.status !== 'end').map((c) => c.quit()));
  await redis.stop();
});

/** One worker: its own connection, its own lease view, and a record of its callbacks. */
interface TestWorker {
  leases: StreamLeases;
  conn: RedisClient;
  events: Array<{ name: string; token?: number; reason?: StreamLostReason }>;
}

function worker(prefix: string, id: string, streams: string[], options: StreamLeasesOptions = {}): TestWorker {
  const conn = createRedisConnection(redis.url, { blocking: false });
  clients.push(conn);
  const events: TestWorker['events'] = [];
  const leases = new StreamLeases(conn, id, {
    prefix,
    onAcquired: (name, token) => events.push({ name, token }),
    onLost: (name, reason) => events.push({ name, reason }),
    ...options,
  });
  leases.setStreams(streams, 1);
  return { leases, conn, events };
}

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `binance-trades-${i}`);

/** No stream is held (by the workers' own views, which sessions act on) by two workers. */
function assertOneHolderAtMost(workers: TestWorker[]): void {
  const seen = new Map<string, string>();
  for (const w of workers) {
    for (const name of w.leases.held().keys()) {
      expect(seen.get(name)).toBeUndefined();
      seen.set(name, w.leases.workerId);
    }
  }
}

/**
 * Ticks the workers round-robin, checking the invariant after every tick, until a round changes
 * nothing. Not the first round: a worker ticking before a newcomer's first tick has not seen it.
 */
async function settle(workers: TestWorker[]): Promise<void> {
  for (let round = 0; round < 20; round++) {
    let changes = 0;
    for (const w of workers) {
      const cycle = await w.leases.tick();
      changes += cycle.acquired.length + cycle.lost.length;
      assertOneHolderAtMost(workers);
    }
    if (changes === 0 && round > 0) return;
  }
  throw new Error('stream leases did not settle in 20 rounds');
}

/** Redis's leases agree with the workers' views: every stream held exactly once, by the worker that thinks so. */
async function assertAllHeldOnce(workers: TestWorker[], streams: string[]): Promise<number[]> {
  const holders = await workers[0]!.leases.holders();
  expect([...holders.keys()].sort()).toEqual([...streams].sort());
  for (const [name, h] of holders) {
    const w = workers.find((x) => x.leases.workerId === h.worker)!;
    expect(w.leases.isHeld(name, h.token)).toBe(true);
  }
  assertOneHolderAtMost(workers);
  return workers.map((w) => w.leases.held().size);
}

describe('StreamLeases', () => {
  it('keeps every stream held once and each worker within fair share + 1 as workers scale 1 -> 3 -> 1', async () => {
    const prefix = redis.namespace();
    const streams = names(10);
    const a = worker(prefix, 'w-a', streams);
    await settle([a]);
    expect(await assertAllHeldOnce([a], streams)).toEqual([10]);
    const tokens = a.leases.held();

    const b = worker(prefix, 'w-b', streams);
    const c = worker(prefix, 'w-c', streams);
    await settle([a, b, c]);
    const counts = await assertAllHeldOnce([a, b, c], streams);
    expect(counts.reduce((s, n) => s + n, 0)).toBe(10);
    expect(Math.max(...counts)).toBeLessThanOrEqual(Math.ceil(10 / 3) + 1);
    // a released its newest acquired streams and kept the rest under their first tokens.
    expect(a.events.filter((e) => e.reason === 'balance')).toHaveLength(10 - counts[0]!);
    for (const [name, token] of a.leases.held()) expect(tokens.get(name)).toBe(token);
    // A move is a new acquisition: the taker's token is above the one a held.
    for (const w of [b, c]) for (const [name, token] of w.leases.held()) expect(token).toBeGreaterThan(tokens.get(name)!);

    // Graceful scale-down: b and c hand over at once, a takes everything on its next cycle.
    const bHeld = [...b.leases.held().keys()].sort();
    expect((await b.leases.releaseAll()).sort()).toEqual(bHeld);
    await c.leases.releaseAll();
    expect(b.leases.held().size + c.leases.held().size).toBe(0);
    expect(c.events.some((e) => e.reason === 'released')).toBe(true);
    const cycle = await a.leases.tick();
    expect(cycle).toMatchObject({ live: 1, fairShare: 10 });
    expect(await assertAllHeldOnce([a, b, c], streams)).toEqual([10, 0, 0]);
  });

  it('hands the streams of a killed and of a paused worker to the others after the TTL, under higher tokens; the paused one finds out on its next tick', async () => {
    const prefix = redis.namespace();
    const streams = names(8);
    // a and b live through the whole test: with a TTL far beyond it, no stall of a loaded machine
    // between their ticks (or before a check of what they hold) loses them a lease. c and d, whose
    // streams are handed over, hold theirs for 2 s.
    const [a, b] = ['w-a', 'w-b'].map((id) => worker(prefix, id, streams, { ttlMs: 600_000 })) as [TestWorker, TestWorker];
    const [c, d] = ['w-c', 'w-d'].map((id) => worker(prefix, id, streams, { ttlMs: 2000 })) as [TestWorker, TestWorker];
    await settle([a, b, c, d]);
    expect(await assertAllHeldOnce([a, b, c, d], streams)).toEqual([2, 2, 2, 2]);
    const staleTokens = new Map([...c.leases.held(), ...d.leases.held()]);

    // d is killed (its connection closes with it); c stops ticking (a paused process). a and b go
    // on until they hold everything.
    await d.conn.quit();
    await waitFor(
      async () => {
        for (const w of [a, b]) await w.leases.tick();
        assertOneHolderAtMost([a, b, c, d]);
        return a.leases.held().size + b.leases.held().size === 8;
      },
      'streams of c and d taken over',
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    // A tick of a or b delayed past the TTL on a loaded machine moves streams between them too: settle first.
    await settle([a, b]);
    expect([a.leases.held().size, b.leases.held().size]).toEqual([4, 4]);
    const holders = await a.leases.holders();
    for (const [name, old] of staleTokens) {
      expect(holders.get(name)!.token).toBeGreaterThan(old);
      expect(c.leases.isHeld(name, old) || d.leases.isHeld(name, old)).toBe(false);
    }

    // c wakes up: its next tick reports its streams lost and takes none (none is free); then the
    // three live workers settle to fair shares again.
    const cycle = await c.leases.tick();
    expect(cycle.lost.map((l) => l.reason)).toEqual(['expired', 'expired']);
    expect(cycle.held.size).toBe(0);
    expect(cycle.live).toBe(3);
    for (const [name, old] of staleTokens) expect(c.leases.isHeld(name, old)).toBe(false);
    await settle([a, b, c]);
    const counts = await assertAllHeldOnce([a, b, c, d], streams);
    expect(Math.max(...counts)).toBeLessThanOrEqual(Math.ceil(8 / 3) + 1);
    expect(counts[3]).toBe(0);
  });

  it('releases a stream removed from the set on the holder next cycle; an older set version is ignored', async () => {
    const prefix = redis.namespace();
    const streams = names(4);
    const a = worker(prefix, 'w-a', streams);
    const b = worker(prefix, 'w-b', streams);
    await settle([a, b]);
    const gone = [...a.leases.held().keys()][0]!;
    const kept = streams.filter((s) => s !== gone);
    expect(a.leases.setStreams(kept, 2)).toBe(true);
    expect(b.leases.setStreams(kept, 2)).toBe(true);
    expect(a.leases.setStreams(streams, 1)).toBe(false);
    const cycle = await a.leases.tick();
    expect(cycle.lost).toEqual([{ name: gone, reason: 'removed' }]);
    await settle([a, b]);
    expect((await assertAllHeldOnce([a, b], kept)).sort()).toEqual([1, 2]);
  });

  it('reports leases lost when Redis cannot renew them in time, and rejects the tick', async () => {
    const prefix = redis.namespace();
    const a = worker(prefix, 'w-a', ['s1'], { ttlMs: 200 });
    const token = (await a.leases.tick()).held.get('s1')!;
    expect(token).toBe(1);
    a.conn.disconnect();
    await waitFor(() => !a.leases.isHeld('s1', token), 'local lease deadline passed');
    await expect(a.leases.tick()).rejects.toThrow();
    expect(a.events.at(-1)).toEqual({ name: 's1', reason: 'expired' });
  });

  it('once started, cycles on nudges too: a newcomer gets its share and a stopped worker hands over without waiting for a period', async () => {
    const prefix = redis.namespace();
    const errors: unknown[] = [];
    // A period far longer than any wait below: only nudges can move streams here.
    const options = { ttlMs: 600_000, onError: (err: unknown) => errors.push(err) };
    const streams = names(4);
    const a = worker(prefix, 'w-a', streams, options);
    a.leases.start();
    await waitFor(() => a.leases.held().size === 4, 'a took every stream');
    const b = worker(prefix, 'w-b', streams, options);
    b.leases.start();
    await waitFor(() => a.leases.held().size === 2 && b.leases.held().size === 2, 'a shed half to b');
    assertOneHolderAtMost([a, b]);
    const bHeld = [...b.leases.held().keys()].sort();
    expect((await b.leases.stop()).sort()).toEqual(bHeld);
    await waitFor(() => a.leases.held().size === 4, "a took b's streams");
    expect((await a.leases.stop()).sort()).toEqual(streams);
    expect((await a.leases.holders()).size).toBe(0);
    expect(a.events.filter((e) => e.reason === 'balance')).toHaveLength(2);
    expect(errors).toEqual([]);
  });

  it('nudges the started workers when a cycle finds a dead worker, so all take their grown share of its streams at once', async () => {
    const prefix = redis.namespace();
    const errors: unknown[] = [];
    const streams = names(6);
    // a and b cycle on nudges only (a period of 200 s); c has a short TTL and then dies.
    const options = { ttlMs: 600_000, onError: (err: unknown) => errors.push(err) };
    const a = worker(prefix, 'w-a', streams, options);
    const b = worker(prefix, 'w-b', streams, options);
    a.leases.start();
    b.leases.start();
    await waitFor(() => a.leases.held().size === 3 && b.leases.held().size === 3, 'a and b split the streams');
    const c = worker(prefix, 'w-c', streams, { ttlMs: 300 });
    await c.leases.tick(); // joins: a and b shed one stream each
    await waitFor(async () => (await c.leases.tick()).held.size === 2, 'c took its share');
    await waitFor(async () => ![...(await a.leases.holders()).values()].some((h) => h.worker === 'w-c'), "c's leases lapsed");
    // One cycle of b drops c's membership and takes b's share; its nudge makes a take the rest.
    expect((await b.leases.tick()).live).toBe(2);
    await waitFor(() => a.leases.held().size === 3 && b.leases.held().size === 3, "a and b took c's streams");
    assertOneHolderAtMost([a, b, c]);
    await Promise.all([a.leases.stop(), b.leases.stop()]);
    expect(errors).toEqual([]);
  });

  it('keeps its keys under one hash tag and checks its inputs', async () => {
    const keys = streamLeaseKeys('tf:test');
    for (const key of Object.values(keys)) expect(key).toMatch(/^tf:test:streams:\{streams\}:/);
    const conn = createRedisConnection(redis.url, { blocking: false });
    clients.push(conn);
    expect(() => new StreamLeases(conn, 'has space')).toThrow(ValidationError);
    expect(() => new StreamLeases(conn, 'w', { ttlMs: 3000, renewEveryMs: 3000 })).toThrow(/renewEveryMs/);
    expect(() => new StreamLeases(conn, 'w', { prefix: '{x}' })).toThrow(ValidationError);
    expect(() => new StreamLeases(conn, 'w').setStreams([''], 1)).toThrow(/stream name/);
    await expect(new StreamLeases(conn, 'w').tick()).rejects.toThrow(/setStreams\(\) before the first cycle/);
    expect(() => new StreamLeases(conn, 'w').start()).toThrow(/onError/);
  });
});

describe('StreamLeases on a Redis Cluster', () => {
  it('runs the stream lease cycle, its nudges and the connect-attempt log on the cluster', async () => {
    const cluster = await startRedisCluster();
    const clusterConn = createRedisConnection(cluster.url, { blocking: false });
    try {
      const streams = ['s1', 's2', 's3'];
      const errors: unknown[] = [];
      // A period far longer than the waits: streams move on nudges (pub/sub through the cluster).
      const options = { prefix: 'clusterstreams', ttlMs: 600_000, onError: (err: unknown) => errors.push(err) };
      const a = new StreamLeases(clusterConn, 'w-a', options);
      const b = new StreamLeases(clusterConn, 'w-b', options);
      for (const w of [a, b]) w.setStreams(streams, 1);
      a.start();
      await waitFor(() => a.held().size === 3, 'a took every stream');
      b.start();
      await waitFor(() => a.held().size === 2 && b.held().size === 1, 'a shed one stream to b');
      expect([...(await a.holders()).keys()].sort()).toEqual(streams);
      await b.stop();
      await waitFor(() => a.held().size === 3, "a took b's stream");
      expect((await a.stop()).sort()).toEqual(streams);
      expect(errors).toEqual([]);
      expect((await new ConnectAttempts(clusterConn, { prefix: 'clusterstreams' }).tryConnectAttempt('binance')).allowed).toBe(true);
    } finally {
      await clusterConn.quit();
      await cluster.stop();
    }
    // Its own cluster's start (up to 60 s under load, as the queues' cluster suite allows) plus the test.
  }, 120_000);
});
