/**
 * What one unit of each kind costs the shared services, for docs/capacity.md: Redis commands,
 * bytes and CPU, MongoDB commands (state store and sink apart), documents and bytes, and the CPU
 * of the workers, the scheduler and the MongoDB server, per unit.
 *
 *   node --import tsx scripts/bench/capacity-costs.ts [--live 5000] [--warm 2000] [--bound 0] [--pages 100] [--outcomes 1000] [--window 30] [--idle 30] [--workers 2]
 *
 * One real fleet: a private redis-server, the venue emulations over HTTP, the MongoDB wire server
 * in its own process as state store and sink (`mongodb://`), `--workers` worker processes and a
 * scheduler from the CLI, with the workers' production defaults (heartbeat, connector poll, unit
 * lock, stalled check). Two counting proxies (fixtures/mongo-counter.ts) stand between the fleet and
 * the wire server, one for the store, one for the sink; the benchmark's own store reads go around
 * them. Redis is counted by INFO commandstats, cpu, stats and memory deltas.
 *
 * Phases, in order, each a window with its deltas, after `--warm` live units that are not measured:
 * 1. idle (baseline): the fleet up, nothing due, `--idle` s: the background rates per second that
 *    every other phase subtracts (heartbeats, connector polls, stalled checks, driver monitoring,
 *    this benchmark's own polling of the queue);
 * 2. enqueue: `--live` `1h` candle jobs fall due at one instant while the venue's queue is paused:
 *    the scheduler's claim and enqueue per job, its claim rate, and Redis memory per waiting unit;
 * 3. live: the queue resumed; one unit per job, one klines request of 5 candles each;
 *    with `--bound N`, again for `--live` other jobs under a budget of N requests per 10 s (units
 *    meet a spent budget, yield and come back);
 * 4. backfill: one `1m` backfill of `--pages` pages of 1,000 candles (one unit per page);
 * 5. idle again (a second baseline; the two are averaged);
 * 6. book loop: Polymarket `--outcomes` order books on a 1 s loop (`--book-loop 1s`), a window of
 *    `--window` s after every outcome was polled once; a unit here is one book asked for.
 *
 * Per unit = (phase delta - baseline rate x phase seconds) / units, units counted by the
 * emulation (klines requests, book tokens asked). The last line is the whole result as JSON.
 */
import { marketTokenIds, polymarketMarkets, DEFAULT_SEED } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues, type RedisClient } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';
import { loadavg } from 'node:os';
import { startMongoWireProcess } from '../chaos/fixtures/store-outage.js';
import { intArg, positiveIntArg } from './fixtures/args.js';
import { mongoDelta, startMongoCounter, type MongoCounter, type MongoCounts } from './fixtures/mongo-counter.js';
import { machineCpuMs, procCpuMs } from './fixtures/proc-cpu.js';
import { redisCalls, redisCpuMs } from './fixtures/redis-stats.js';

const args = process.argv.slice(2);
const LIVE = positiveIntArg(args, 'live', 5000);
/** Live units run before anything is measured, so the workers' hot code is compiled. */
const WARM = positiveIntArg(args, 'warm', 2000);
/** `--bound N`: also run `--live` more live units with the venue's budget cut to N requests per 10 s, so units meet a spent budget and yield. */
const BOUND = intArg(args, 'bound', 0, 0);
const PAGES = positiveIntArg(args, 'pages', 100);
const OUTCOMES = positiveIntArg(args, 'outcomes', 1000);
const WINDOW_S = positiveIntArg(args, 'window', 30);
const IDLE_S = positiveIntArg(args, 'idle', 30);
const WORKERS = positiveIntArg(args, 'workers', 2);
/** How often the benchmark polls the queue and store while it waits (the same in every phase, so the baseline holds it). */
const POLL_MS = 500;
/** The fewest Polymarket markets whose open ones have `OUTCOMES` tokens. */
const MARKETS = (() => {
  for (let n = Math.ceil(OUTCOMES / 2); ; n++) if (polymarketMarkets(DEFAULT_SEED, n).filter((m) => !m.closed).length * 2 >= OUTCOMES) return n;
})();

interface Reading {
  atMs: number;
  redisCalls: Map<string, number>;
  redisCpuMs: number;
  redisNetIn: number;
  redisNetOut: number;
  redisMemory: number;
  store: MongoCounts;
  sink: MongoCounts;
  workersCpuMs: number;
  schedulerCpuMs: number;
  mongoCpuMs: number;
  machine: { busy: number; total: number };
}

/** One phase's deltas; `units` as the emulation counted them. */
interface Phase {
  name: string;
  units: number;
  seconds: number;
  redisCalls: Map<string, number>;
  redisCpuMs: number;
  redisNetIn: number;
  redisNetOut: number;
  redisMemoryDelta: number;
  store: MongoCounts;
  sink: MongoCounts;
  workersCpuMs: number;
  schedulerCpuMs: number;
  mongoCpuMs: number;
  machineBusy: number;
  load: number;
}

const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
/** Commands that write: inserts, updates, deletes and findAndModify. */
const writes = (m: Map<string, number>): number => [...m].reduce((n, [k, v]) => (/^(insert|update|delete|findAndModify) /.test(k) ? n + v : n), 0);
const top = (m: Map<string, number>, div: number, n = 6): string =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${k} ${(v / div).toFixed(2)}`)
    .join(', ');

async function redisInfo(redis: RedisClient): Promise<{ netIn: number; netOut: number; memory: number }> {
  const text = await redis.info();
  const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { netIn: field('total_net_input_bytes'), netOut: field('total_net_output_bytes'), memory: field('used_memory') };
}

function mapDelta(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  return new Map([...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
}

async function main(): Promise<void> {
  process.stderr.write(
    `capacity-costs: ${WORKERS} worker processes; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  const mongo = await startMongoWireProcess();
  const storeCounter: MongoCounter = await startMongoCounter(mongo.url);
  const sinkCounter: MongoCounter = await startMongoCounter(mongo.url);
  const liveSymbols = Array.from({ length: LIVE }, (_, i) => `L${String(i).padStart(5, '0')}/USDT`);
  const warmSymbols = Array.from({ length: WARM }, (_, i) => `W${String(i).padStart(5, '0')}/USDT`);
  const boundSymbols = Array.from({ length: BOUND ? LIVE : 0 }, (_, i) => `B${String(i).padStart(5, '0')}/USDT`);
  const fleet = await FleetHarness.start({
    venues: {
      binance: { symbols: ['BTC/USDT', ...liveSymbols, ...warmSymbols, ...boundSymbols], limit: { enabled: false } },
      polymarket: { markets: MARKETS },
    },
  });
  const db = `cap${fleet.prefix.replace(/\W/g, '')}`;
  // Every command and role the harness starts reads these: the fleet talks through the counters.
  Object.defineProperty(fleet, 'storeUrl', { value: `${storeCounter.url}${db}` });
  Object.defineProperty(fleet, 'sinkUrl', { value: `${sinkCounter.url}${db}data` });
  const direct: StateStore = await openStore(`${mongo.url.replace(/\/?$/, '/')}${db}`);
  const redis = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(redis, { prefix: fleet.prefix });
  const procs: FleetProcess[] = [];
  // The production defaults (log level info included), not the harness's short test values.
  const defaults = { TICKFLEET_UNIT_LOCK_MS: '', TICKFLEET_STALLED_INTERVAL_MS: '', TICKFLEET_CONNECTOR_POLL_MS: '', TICKFLEET_HEARTBEAT_MS: '' };
  try {
    const binanceConnector = (rateLimit: { limit: number; periodMs: number }) =>
      direct.connectors.upsert({ venue: 'binance', baseUrl: fleet.mock.baseUrl('binance'), rateLimit, maxInflight: 32 });
    // An hour's window: its end-of-window guard stays out of the phases (fleet-scale.ts).
    const UNBOUND = { limit: 1_000_000_000, periodMs: 3_600_000 };
    await binanceConnector(UNBOUND);
    const workers = Array.from({ length: WORKERS }, (_, i) => fleet.spawn(`worker-${i}`, ['worker'], defaults));
    procs.push(...workers);
    const scheduler = fleet.spawnScheduler({ ...defaults, TICKFLEET_SCHEDULER_BOOK_EVERY_MS: '1000' });
    procs.push(scheduler);
    for (const w of workers) await fleet.ready(w);

    const read = async (): Promise<Reading> => {
      const info = await redisInfo(redis);
      return {
        atMs: Date.now(),
        redisCalls: await redisCalls(redis),
        redisCpuMs: await redisCpuMs(redis),
        redisNetIn: info.netIn,
        redisNetOut: info.netOut,
        redisMemory: info.memory,
        store: storeCounter.snapshot(),
        sink: sinkCounter.snapshot(),
        workersCpuMs: workers.reduce((n, w) => n + procCpuMs(w.child.pid), 0),
        schedulerCpuMs: procCpuMs(scheduler.child.pid),
        mongoCpuMs: procCpuMs(mongo.child.pid),
        machine: machineCpuMs(),
      };
    };
    const venueRequests = (venue: 'binance' | 'polymarket'): number => fleet.mock.stats().venues[venue]?.requests ?? 0;
    const phase = (name: string, a: Reading, b: Reading, units: number): Phase => ({
      name,
      units,
      seconds: (b.atMs - a.atMs) / 1000,
      redisCalls: mapDelta(a.redisCalls, b.redisCalls),
      redisCpuMs: b.redisCpuMs - a.redisCpuMs,
      redisNetIn: b.redisNetIn - a.redisNetIn,
      redisNetOut: b.redisNetOut - a.redisNetOut,
      redisMemoryDelta: b.redisMemory - a.redisMemory,
      store: mongoDelta(a.store, b.store),
      sink: mongoDelta(a.sink, b.sink),
      workersCpuMs: b.workersCpuMs - a.workersCpuMs,
      schedulerCpuMs: b.schedulerCpuMs - a.schedulerCpuMs,
      mongoCpuMs: b.mongoCpuMs - a.mongoCpuMs,
      machineBusy: (b.machine.busy - a.machine.busy) / (b.machine.total - a.machine.total),
      load: loadavg()[0]!,
    });
    const queue = queues.queue('binance');
    /** The benchmark's own polling, the same in every phase: the queue's counts every POLL_MS. */
    const pollUntil = (done: () => Promise<boolean> | boolean, what: string, timeoutMs = 900_000): Promise<unknown> =>
      waitFor(
        async () => {
          await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
          return done();
        },
        what,
        { timeoutMs, intervalMs: POLL_MS },
      );
    const idle = async (name: string): Promise<Phase> => {
      const a = await read();
      await pollUntil(() => Date.now() - a.atMs >= IDLE_S * 1000, name);
      return phase(name, a, await read(), 0);
    };
    const phases: Phase[] = [];
    const log = (p: Phase): void => {
      phases.push(p);
      process.stderr.write(
        `${p.name}: ${p.units} units in ${p.seconds.toFixed(1)} s; Redis ${sum(p.redisCalls)} commands, store ${sum(p.store.commands)}, sink ${sum(p.sink.commands)}; ` +
          `CPU ms workers ${p.workersCpuMs.toFixed(0)}, scheduler ${p.schedulerCpuMs.toFixed(0)}, redis ${p.redisCpuMs.toFixed(0)}, mongo ${p.mongoCpuMs.toFixed(0)}; machine busy ${(100 * p.machineBusy).toFixed(0)}%, load ${p.load.toFixed(1)}\n`,
      );
    };

    /** Seeding time per job, ms, as last measured (the warm-up's seeding sets it). */
    let seedMsPerJob = 30;
    /**
     * Phases 2 and 3 for `symbols`: seeded around the proxies (uncounted) to fall due together at
     * one instant after the seeding ends, while the queue is paused, so the enqueue phase holds
     * only the scheduler's claims and enqueues and its rate is the claim rate; then run.
     */
    const liveRun = async (symbols: string[], measured: boolean): Promise<[Phase, Phase]> => {
      const since = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 5 * 3_600_000;
      const ids: string[] = [];
      const t0 = Date.now();
      const dueAt = Math.ceil(t0 + 2 * seedMsPerJob * symbols.length + 3000);
      await queue.pause();
      for (const symbol of symbols)
        ids.push((await direct.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol, timeframe: '1h', since, nextRunAt: dueAt })).id);
      seedMsPerJob = (Date.now() - t0) / symbols.length;
      if (measured && Date.now() >= dueAt) throw new Error('seeding the measured jobs took longer than planned: the enqueue window would include it');
      await new Promise((r) => setTimeout(r, Math.max(0, dueAt - Date.now())));
      const e0 = await read();
      let queued = 0;
      await pollUntil(async () => {
        const c = await queue.getJobCounts('waiting', 'prioritized');
        queued = (c.waiting ?? 0) + (c.prioritized ?? 0);
        return queued >= symbols.length;
      }, `${symbols.length} units enqueued`);
      const enqueue = phase('enqueue', e0, await read(), queued);
      const l0 = await read();
      const r0 = venueRequests('binance');
      await queue.resume();
      const wanted = new Set(ids);
      await pollUntil(async () => {
        const c = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
        if ((c.waiting ?? 0) + (c.prioritized ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) > 0) return false;
        const ran = (await direct.jobs.list({ venue: 'binance' })).filter((j) => wanted.has(j.id) && j.stats.runs >= 1);
        return ran.length === wanted.size;
      }, `${symbols.length} live units done`);
      const live = phase('live', l0, await read(), venueRequests('binance') - r0);
      // Hourly jobs: due again at the next hour, inside a later phase; disabled so they are not.
      for (const id of ids) await direct.jobs.setEnabled(id, false);
      return [enqueue, live];
    };
    // Warm-up, not reported: every worker process meets the measured units with its code compiled (fleet-scale.ts).
    await liveRun(warmSymbols, false);
    process.stderr.write(`warm-up: ${WARM} live units\n`);
    log(await idle('idle 1'));
    const [enqueue, live] = await liveRun(liveSymbols, true);
    log(enqueue);
    log(live);
    if (BOUND > 0) {
      // The workers re-read connectors every 5 s (connector poll): wait that out before and after.
      await binanceConnector({ limit: BOUND, periodMs: 10_000 });
      await new Promise((r) => setTimeout(r, 6000));
      const [, bound] = await liveRun(boundSymbols, true);
      bound.name = 'live, budget bound';
      log(bound);
      await binanceConnector(UNBOUND);
      await new Promise((r) => setTimeout(r, 6000));
    }

    // 4. backfill: one symbol, PAGES pages of 1,000 1m candles.
    const to = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
    const from = to - PAGES * 1000 * 60_000;
    const b0 = await read();
    const rb0 = venueRequests('binance');
    const created = JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', from, to, '--json')) as { id: string };
    await pollUntil(async () => {
      const bf = await direct.backfills.get(created.id);
      if (bf && (bf.status === 'failed' || bf.status === 'cancelled')) throw new Error(`backfill ${created.id} ended ${bf.status}`);
      return bf?.status === 'done';
    }, 'backfill done');
    log(phase('backfill', b0, await read(), venueRequests('binance') - rb0));

    log(await idle('idle 2'));

    // 6. book loop: Polymarket books polled by the loop at 1 s.
    await fleet.upsertConnector('polymarket', '--limit', '1500', '--period', '10s', '--max-inflight', '8', '--book-loop', '1s');
    await fleet.ok('jobs', 'add', 'polymarket', 'discovery', 'markets');
    const tokens = polymarketMarkets(DEFAULT_SEED, MARKETS)
      .filter((m) => !m.closed)
      .flatMap(marketTokenIds)
      .slice(0, OUTCOMES);
    const seen = (): number => new Set(fleet.mock.polymarketBookRequests().flatMap((r) => r.tokens)).size;
    await pollUntil(() => seen() >= tokens.length, 'every outcome polled once', 300_000);
    const k0 = await read();
    const asked0 = fleet.mock.polymarketBookRequests().length;
    const kr0 = venueRequests('polymarket');
    await pollUntil(() => Date.now() - k0.atMs >= WINDOW_S * 1000, 'book window');
    const k1 = await read();
    const asked = fleet.mock
      .polymarketBookRequests()
      .slice(asked0)
      .reduce((n, r) => n + r.tokens.length, 0);
    const book = phase('book loop', k0, k1, asked);
    log(book);
    process.stderr.write(`book loop: ${venueRequests('polymarket') - kr0} venue requests for ${asked} books\n`);

    const jobs = await direct.jobs.list({ venue: 'binance' });
    const jobBytes = jobs.reduce((n, j) => n + Buffer.byteLength(JSON.stringify(j)), 0) / jobs.length;
    report(phases, jobBytes);
  } finally {
    for (const p of procs) await fleet.stopProcess(p).catch(() => undefined);
    await queues.close();
    redis.disconnect();
    await direct.close();
    await fleet.stop();
    await storeCounter.stop();
    await sinkCounter.stop();
    await mongo.stop();
  }
}

/** Prints per-unit costs net of the baseline, and the baseline itself per second. */
function report(phases: Phase[], jobBytes: number): void {
  const idles = phases.filter((p) => p.name.startsWith('idle'));
  const idleSeconds = idles.reduce((n, p) => n + p.seconds, 0);
  const rate = (f: (p: Phase) => number): number => idles.reduce((n, p) => n + f(p), 0) / idleSeconds;
  const base = {
    redisCalls: rate((p) => sum(p.redisCalls)),
    redisBytes: rate((p) => p.redisNetIn + p.redisNetOut),
    redisCpuMs: rate((p) => p.redisCpuMs),
    storeCommands: rate((p) => sum(p.store.commands)),
    storeBytes: rate((p) => p.store.bytesIn + p.store.bytesOut),
    sinkCommands: rate((p) => sum(p.sink.commands)),
    sinkBytes: rate((p) => p.sink.bytesIn + p.sink.bytesOut),
    workersCpuMs: rate((p) => p.workersCpuMs),
    schedulerCpuMs: rate((p) => p.schedulerCpuMs),
    mongoCpuMs: rate((p) => p.mongoCpuMs),
  };
  const idleCalls = new Map<string, number>();
  for (const p of idles) for (const [k, v] of p.redisCalls) idleCalls.set(k, (idleCalls.get(k) ?? 0) + v);
  const idleStore = new Map<string, number>();
  for (const p of idles) for (const [k, v] of p.store.commands) idleStore.set(k, (idleStore.get(k) ?? 0) + v);
  console.log(`\nBaseline (idle fleet, ${WORKERS} workers + scheduler, per second; ${idleSeconds.toFixed(0)} s):`);
  console.log(
    `Redis ${base.redisCalls.toFixed(1)} commands/s (${top(idleCalls, idleSeconds)}), ${(base.redisBytes / 1024).toFixed(1)} KiB/s, ${base.redisCpuMs.toFixed(1)} ms CPU/s; ` +
      `store ${base.storeCommands.toFixed(2)} commands/s (${top(idleStore, idleSeconds)}), sink ${base.sinkCommands.toFixed(2)}/s; CPU ms/s workers ${base.workersCpuMs.toFixed(1)}, scheduler ${base.schedulerCpuMs.toFixed(1)}, mongo ${base.mongoCpuMs.toFixed(1)}`,
  );
  console.log(
    '\n| per unit, net of the baseline | units | s | machine busy / load | Redis commands | Redis bytes | store commands | store writes | store bytes | sink commands | sink docs | sink bytes | worker CPU ms | scheduler CPU ms | redis-server CPU µs | mongo CPU µs |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const result: Record<string, unknown> = { workers: WORKERS, baselinePerSecond: base };
  for (const p of phases.filter((x) => x.units > 0)) {
    const net = (v: number, r: number): number => (v - r * p.seconds) / p.units;
    const row = {
      redisCommands: net(sum(p.redisCalls), base.redisCalls),
      redisBytes: net(p.redisNetIn + p.redisNetOut, base.redisBytes),
      storeCommands: net(sum(p.store.commands), base.storeCommands),
      storeWrites: net(
        writes(p.store.commands),
        rate((x) => writes(x.store.commands)),
      ),
      storeBytes: net(p.store.bytesIn + p.store.bytesOut, base.storeBytes),
      sinkCommands: net(sum(p.sink.commands), base.sinkCommands),
      sinkDocs: sum(p.sink.documents) / p.units,
      sinkBytes: net(p.sink.bytesIn + p.sink.bytesOut, base.sinkBytes),
      workerCpuMs: net(p.workersCpuMs, base.workersCpuMs),
      schedulerCpuMs: net(p.schedulerCpuMs, base.schedulerCpuMs),
      redisCpuUs: 1000 * net(p.redisCpuMs, base.redisCpuMs),
      mongoCpuUs: 1000 * net(p.mongoCpuMs, base.mongoCpuMs),
      redisMemoryPerUnit: p.redisMemoryDelta / p.units,
      redisTop: top(p.redisCalls, p.units, 8),
      storeTop: top(p.store.commands, p.units, 8),
      storeDocsTop: top(p.store.documents, p.units, 4),
      sinkTop: top(p.sink.commands, p.units, 4),
      sinkDocsTop: top(p.sink.documents, p.units, 4),
      sinkBytesPerDoc: sum(p.sink.documents) ? p.sink.bytesIn / sum(p.sink.documents) : NaN,
    };
    result[p.name] = { units: p.units, seconds: p.seconds, machineBusy: p.machineBusy, load: p.load, ...row };
    const f = (v: number, d = 2): string => v.toFixed(d);
    console.log(
      `| ${p.name} | ${p.units} | ${f(p.seconds, 1)} | ${f(100 * p.machineBusy, 0)}% / ${f(p.load, 1)} | ${f(row.redisCommands, 1)} | ${f(row.redisBytes, 0)} | ${f(row.storeCommands)} | ${f(row.storeWrites)} | ${f(row.storeBytes, 0)} | ${f(row.sinkCommands)} | ${f(row.sinkDocs)} | ${f(row.sinkBytes, 0)} | ${f(row.workerCpuMs)} | ${f(row.schedulerCpuMs, 3)} | ${f(row.redisCpuUs, 0)} | ${f(row.mongoCpuUs, 0)} |`,
    );
  }
  for (const p of phases.filter((x) => x.units > 0)) {
    const r = result[p.name] as Record<string, unknown>;
    console.log(`\n${p.name}: Redis per unit: ${String(r.redisTop)}\n  store per unit: ${String(r.storeTop)}; documents: ${String(r.storeDocsTop)}`);
    console.log(
      `  sink per unit: ${String(r.sinkTop)}; documents: ${String(r.sinkDocsTop)}; ${Number(r.sinkBytesPerDoc).toFixed(0)} bytes sent per sink document`,
    );
    console.log(
      `  Redis memory change over the phase: ${(p.redisMemoryDelta / 1024).toFixed(0)} KiB, ${(p.redisMemoryDelta / p.units).toFixed(0)} bytes per unit`,
    );
  }
  console.log(`\nA job document: ${jobBytes.toFixed(0)} bytes as JSON (mean over ${LIVE + WARM} candle jobs)`);
  result.jobJsonBytes = jobBytes;
  console.log(JSON.stringify(result));
}

await main();
