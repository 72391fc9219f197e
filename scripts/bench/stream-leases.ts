/**
 * Stream leases benchmark (docs/streams-fleet.md): what one lease cycle costs, and how long streams
 * go unheld when a worker dies, leaves gracefully, or workers are added, with real timers.
 *
 *   node --import tsx scripts/bench/stream-leases.ts [--streams 30] [--ttl <ms, default STREAM_DEFAULTS.leaseTtlMs>] [--cycle-streams 1000] [--cycle-workers 10]
 *
 * Ground truth is Redis itself: the leases hash is read every 20 ms, and for each stream the
 * longest stretch without a live lease is measured (resolution: the 20 ms sampling).
 */
import { startRedis } from '@tickfleet/testkit';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { renewEveryMsFor } from '@tickfleet/core';
import { STREAM_DEFAULTS, StreamLeases } from '@tickfleet/streams';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const STREAMS = arg('streams', 30);
const TTL = arg('ttl', STREAM_DEFAULTS.leaseTtlMs);
const CYCLE_STREAMS = arg('cycle-streams', 1000);
const CYCLE_WORKERS = arg('cycle-workers', 10);

const redis = await startRedis();
const conns: RedisClient[] = [];
const conn = (): RedisClient => {
  const c = createRedisConnection(redis.url, { blocking: false });
  conns.push(c);
  return c;
};
const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `s${i}`);
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const errors: unknown[] = [];

function startWorker(prefix: string, id: string, streams: string[], c = conn()): StreamLeases {
  const w = new StreamLeases(c, id, { prefix, ttlMs: TTL, onError: (err) => errors.push(err) });
  w.setStreams(streams, 1);
  w.start();
  return w;
}

/**
 * Samples the leases until `done` holds for every stream being held; returns the time that took
 * and the longest per-stream unheld stretch seen.
 */
async function watch(observer: StreamLeases, streams: string[], done: (held: Map<string, string>) => boolean): Promise<{ ms: number; longestGapMs: number }> {
  const started = performance.now();
  const unheldSince = new Map<string, number>();
  let longest = 0;
  for (;;) {
    const now = performance.now();
    const holders = await observer.holders();
    for (const s of streams) {
      if (holders.has(s)) {
        const since = unheldSince.get(s);
        if (since !== undefined) longest = Math.max(longest, now - since);
        unheldSince.delete(s);
      } else if (!unheldSince.has(s)) unheldSince.set(s, now);
    }
    const held = new Map([...holders].map(([s, h]) => [s, h.worker]));
    if (unheldSince.size === 0 && done(held)) return { ms: now - started, longestGapMs: longest };
    if (now - started > 60_000) throw new Error('leases did not settle in 60 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const perWorker = (held: Map<string, string>): number[] => {
  const counts = new Map<string, number>();
  for (const w of held.values()) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.values()];
};

// 1. Cycle cost: CYCLE_WORKERS workers over CYCLE_STREAMS streams, settled, then timed cycles.
{
  const prefix = redis.namespace();
  const streams = names(CYCLE_STREAMS);
  const workers = Array.from({ length: CYCLE_WORKERS }, (_, i) => {
    const w = new StreamLeases(conn(), `w${i}`, { prefix, ttlMs: 60_000 });
    w.setStreams(streams, 1);
    return w;
  });
  for (let round = 0; round < 3; round++) for (const w of workers) await w.tick();
  const cycle: number[] = [];
  for (let round = 0; round < 20; round++) {
    for (const w of workers) {
      const t = performance.now();
      await w.tick();
      cycle.push(performance.now() - t);
    }
  }
  const ping: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await conns[0]!.ping();
    ping.push(performance.now() - t);
  }
  console.log(
    `cycle, ${CYCLE_WORKERS} workers x ${CYCLE_STREAMS} streams: p50 ${pct(cycle, 50).toFixed(2)} ms, p99 ${pct(cycle, 99).toFixed(2)} ms` +
      ` (Redis PING p50 ${pct(ping, 50).toFixed(3)} ms)`,
  );
}

// 2. Scale 1 -> 3, a worker killed, a worker stopped gracefully: STREAMS streams, TTL, real timers.
{
  const prefix = redis.namespace();
  const streams = names(STREAMS);
  const share = (live: number): number => Math.ceil(STREAMS / live);
  const observer = new StreamLeases(conn(), 'observer', { prefix });
  const a = startWorker(prefix, 'a', streams);
  await watch(observer, streams, (h) => perWorker(h).length === 1);
  const b = startWorker(prefix, 'b', streams);
  const cConn = conn();
  const c = startWorker(prefix, 'c', streams, cConn);
  const up = await watch(observer, streams, (h) => perWorker(h).length === 3 && Math.max(...perWorker(h)) <= share(3));
  console.log(`scale 1 -> 3: settled in ${up.ms.toFixed(0)} ms, longest unheld stream ${up.longestGapMs.toFixed(0)} ms (ttl ${TTL} ms)`);

  cConn.disconnect(); // c dies: no release, its leases run out
  const kill = await watch(observer, streams, (h) => !perWorker(h).includes(0) && ![...h.values()].includes('c'));
  console.log(
    `worker killed: its streams held again after ${kill.ms.toFixed(0)} ms, longest unheld stream ${kill.longestGapMs.toFixed(0)} ms (bound ttl + renewal period = ${(TTL + renewEveryMsFor(TTL)).toFixed(0)} ms)`,
  );

  await b.stop(); // graceful: hands over at once
  const graceful = await watch(observer, streams, (h) => [...h.values()].every((w) => w === 'a'));
  console.log(
    `worker stopped (SIGTERM path): its streams held again after ${graceful.ms.toFixed(0)} ms, longest unheld stream ${graceful.longestGapMs.toFixed(0)} ms`,
  );
  await a.stop();
  await c.stop().catch(() => undefined);
}

console.log(`timer cycle errors: ${errors.length} (the killed worker's, whose connection is gone)`);
await Promise.all(conns.filter((c) => c.status !== 'end').map((c) => c.quit()));
await redis.stop();
