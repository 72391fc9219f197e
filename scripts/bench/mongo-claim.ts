/**
 * The scheduler's claim on a MongoDB state store: `--jobs` jobs of one venue fall due at one
 * instant and one `claimDue(now, --jobs, lease)` leases them all, as a leader's tick does. The
 * store is the MongoDB wire server in its own process; printed per round: claims per second and
 * the wire server's CPU per claimed job, then the medians. Each round claims on a fresh database.
 *
 *   node --import tsx scripts/bench/mongo-claim.ts [--jobs 5000] [--rounds 3]
 *
 * To compare two versions of the claim, run this file in both checkouts back to back.
 */
import { loadavg } from 'node:os';
import { openStore } from '@tickfleet/store';
import { startMongoWireProcess } from '../chaos/fixtures/store-outage.js';
import { positiveIntArg } from './fixtures/args.js';
import { procCpuMs } from './fixtures/proc-cpu.js';

const args = process.argv.slice(2);
const JOBS = positiveIntArg(args, 'jobs', 5000);
const ROUNDS = positiveIntArg(args, 'rounds', 3);
const LEASE_MS = 300_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const wire = await startMongoWireProcess();
const rates: number[] = [];
const cpuPerJob: number[] = [];
try {
  console.log(`load ${loadavg()[0]!.toFixed(1)}; ${JOBS} jobs due at once, ${ROUNDS} rounds`);
  for (let round = 0; round < ROUNDS; round++) {
    const store = await openStore(`${wire.url}claim${round}x${Date.now()}`);
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
      for (let i = 0; i < JOBS; i++) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m', nextRunAt: 0 });
      const cpu0 = procCpuMs(wire.child.pid);
      const t0 = performance.now();
      const claimed = await store.jobs.claimDue(Date.now(), JOBS, LEASE_MS, 'bench');
      const seconds = (performance.now() - t0) / 1000;
      const cpuMs = procCpuMs(wire.child.pid) - cpu0;
      if (claimed.length !== JOBS || new Set(claimed.map((j) => j.id)).size !== JOBS) throw new Error(`claimed ${claimed.length} distinct of ${JOBS}`);
      rates.push(JOBS / seconds);
      cpuPerJob.push(cpuMs / JOBS);
      console.log(
        `round ${round + 1}: ${JOBS} claimed in ${seconds.toFixed(2)} s, ${(JOBS / seconds).toFixed(0)} claims/s, wire server ${(cpuMs / JOBS).toFixed(3)} ms CPU per job`,
      );
    } finally {
      await store.close();
    }
  }
  console.log(`median: ${median(rates).toFixed(0)} claims/s, ${median(cpuPerJob).toFixed(3)} ms of wire-server CPU per job; load ${loadavg()[0]!.toFixed(1)}`);
} finally {
  await wire.stop();
}
