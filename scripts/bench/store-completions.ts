/**
 * What a job completion costs the SQLite state store when a worker completes several units in one
 * event-loop turn (as it does: every unit whose records one sink batch stored) against one per
 * turn. The store writes a turn's completions past its first four in one transaction
 * (`SqliteJobsRepo.complete`), so the rows' moves in the `jobs_due` index share their pages and the
 * write lock is taken once.
 *
 * Each process opens the store with `openStore`, as a worker does, and completes its share of
 * 40,000 due `1h` jobs (next run an hour later, cursor forward), `--per-turn` at a time
 * (`Promise.all`) or one at a time (each awaited), with 1 and 4 processes on one file.
 *
 *   node --import tsx scripts/bench/store-completions.ts [--jobs 40000] [--rounds 2] [--per-turn 16]
 *
 * Prints completions/s and CPU per completion (user + system of every process, summed), rounds interleaved.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '@tickfleet/store';
import { positiveIntArg } from './fixtures/args.js';

const jobId = (i: number): string => `binance:S${i}/USDT:1h:ohlcv`;

async function child(path: string, perTurn: number, from: number, count: number): Promise<void> {
  const store = await openStore(`sqlite://${path}`);
  const nextRunAt = Date.now() + 3_600_000;
  const started = process.cpuUsage();
  for (let i = from; i < from + count; i += perTurn) {
    const turn: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(i + perTurn, from + count); j++) turn.push(store.jobs.complete(jobId(j), { cursor: 1, nextRunAt }));
    await Promise.all(turn);
  }
  const cpu = process.cpuUsage(started);
  await store.close();
  process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000 }, () => process.exit(0));
}

async function measure(jobs: number, perTurn: number, procs: number): Promise<{ perSec: number; cpuUsEach: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'store-completions-'));
  const path = join(dir, 'state.db');
  try {
    const store = await openStore(`sqlite://${path}`);
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
    // Seeded in parallel turns: the upserts of one turn are separate statements, so this is only faster to await.
    for (let i = 0; i < jobs; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, jobs - i) }, (_, k) =>
          store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i + k}/USDT`, timeframe: '1h', since: 0, nextRunAt: 0 }),
        ),
      );
    }
    await store.close();
    const share = Math.floor(jobs / procs);
    const started = performance.now();
    const cpuMs = await Promise.all(
      Array.from(
        { length: procs },
        (_, p) =>
          new Promise<number>((resolve, reject) => {
            const c = fork(fileURLToPath(import.meta.url), ['--child', path, String(perTurn), String(p * share), String(share)]);
            c.once('message', (m) => resolve((m as { cpuMs: number }).cpuMs));
            c.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`child exited ${code}`))));
          }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const done = share * procs;
    return { perSec: done / seconds, cpuUsEach: (cpuMs.reduce((a, b) => a + b, 0) * 1000) / done };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] === '--child') {
  await child(args[1]!, Number(args[2]), Number(args[3]), Number(args[4]));
} else {
  const jobs = positiveIntArg(args, 'jobs', 40_000);
  const rounds = positiveIntArg(args, 'rounds', 2);
  const perTurn = positiveIntArg(args, 'per-turn', 16);
  for (let r = 1; r <= rounds; r++) {
    for (const procs of [1, 4]) {
      for (const n of [1, perTurn]) {
        const { perSec, cpuUsEach } = await measure(jobs, n, procs);
        console.log(
          `round ${r}: ${procs} process(es), ${n} completion(s) per turn: ${perSec.toFixed(0)} completions/s, CPU ${cpuUsEach.toFixed(1)} µs per completion`,
        );
      }
    }
  }
}
