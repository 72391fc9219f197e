/**
 * What a SQLite write costs when several processes share the file: each process runs, per
 * operation, what a worker's store does around one unit (a budget-style `UPDATE … RETURNING` of one
 * connector row, a read of one job, a completion `UPDATE` of that job) on a 50,000-job file
 * (WAL, synchronous NORMAL, no memory map, as the state store opens it), with 1 and with 4
 * processes; again with the connector row in its own attached file (`attached`), to see whether
 * keeping the budget's writes off the jobs file helps the others; and without the budget write
 * (`no-acquire`: the budget elsewhere, as with `TICKFLEET_BUDGET_URL`).
 *
 *   node --import tsx scripts/bench/sqlite-contention.ts [--ops 40000] [--rounds 2] [--mmap BYTES]
 *
 * `--mmap BYTES` opens every connection with `PRAGMA mmap_size = BYTES` (the state store and sink
 * used 256 MiB before: in WAL mode SQLite unmaps a connection's whole map whenever another
 * process has written the file, so each process maps and faults its pages in again, transaction
 * after transaction; docs/benchmarks/sqlite.md).
 *
 * Prints ops/s and CPU per operation (user + system of every process, summed) for each layout and
 * process count, rounds interleaved.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { intArg, positiveIntArg } from './fixtures/args.js';
import { openBetterSqlite3, type BenchDatabase } from './fixtures/better-sqlite3.js';

type Layout = 'one-file' | 'attached' | 'no-acquire';

const JOBS = 50_000;

function open(dir: string, layout: Layout, mmapBytes: number): BenchDatabase {
  const db = openBetterSqlite3(join(dir, 'state.db'), { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma(`mmap_size = ${mmapBytes}`);
  if (layout === 'attached') {
    db.exec(`ATTACH '${join(dir, 'budget.db')}' AS b`);
    db.pragma('b.journal_mode = WAL');
    db.pragma('b.synchronous = NORMAL');
  }
  return db;
}

const jobId = (i: number): string => `binance:SYM${i}/USDT:1h:ohlcv`;

function child(dir: string, layout: Layout, ops: number, mmapBytes: number): void {
  const db = open(dir, layout, mmapBytes);
  const table = layout === 'attached' ? 'b.connectors' : 'connectors';
  const acquire = db.prepare(`UPDATE ${table} SET used = used + 1, at = ? WHERE venue = 'binance' RETURNING used`);
  const read = db.prepare('SELECT cursor FROM jobs WHERE id = ?');
  const complete = db.prepare('UPDATE jobs SET cursor = cursor + 1, updated = ? WHERE id = ?');
  const started = process.cpuUsage();
  for (let i = 0; i < ops; i++) {
    const id = jobId(Math.floor(Math.random() * JOBS));
    if (layout !== 'no-acquire') acquire.get(Date.now());
    read.get(id);
    complete.run(Date.now(), id);
  }
  const cpu = process.cpuUsage(started);
  db.close();
  process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000 }, () => process.exit(0));
}

async function measure(layout: Layout, procs: number, ops: number, mmapBytes: number): Promise<{ opsPerSec: number; cpuUsPerOp: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-contention-'));
  try {
    const db = open(dir, layout, mmapBytes);
    const table = layout === 'attached' ? 'b.connectors' : 'connectors';
    db.exec(`CREATE TABLE jobs (id TEXT PRIMARY KEY, cursor INTEGER, payload TEXT, updated INTEGER) WITHOUT ROWID`);
    db.exec(`CREATE TABLE ${table} (venue TEXT PRIMARY KEY, used INTEGER, at INTEGER)`);
    db.exec(`INSERT INTO ${table} VALUES ('binance', 0, 0)`);
    const insert = db.prepare('INSERT INTO jobs VALUES (?, 0, ?, 0)');
    db.transaction(() => {
      for (let i = 0; i < JOBS; i++) insert.run(jobId(i), 'x'.repeat(200));
    })();
    db.close();
    const started = performance.now();
    const cpuMs = await Promise.all(
      Array.from(
        { length: procs },
        () =>
          new Promise<number>((resolve, reject) => {
            const c = fork(fileURLToPath(import.meta.url), ['--child', dir, layout, String(Math.round(ops / procs)), String(mmapBytes)]);
            c.once('message', (m) => resolve((m as { cpuMs: number }).cpuMs));
            c.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`child exited ${code}`))));
          }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    return { opsPerSec: ops / seconds, cpuUsPerOp: (cpuMs.reduce((a, b) => a + b, 0) * 1000) / ops };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] === '--child') {
  child(args[1]!, args[2] as Layout, Number(args[3]), Number(args[4]));
} else {
  const ops = positiveIntArg(args, 'ops', 40_000);
  const rounds = positiveIntArg(args, 'rounds', 2);
  const mmapBytes = intArg(args, 'mmap', 0, 0);
  for (let r = 1; r <= rounds; r++) {
    for (const layout of ['one-file', 'attached', 'no-acquire'] as const) {
      for (const procs of [1, 4]) {
        const { opsPerSec, cpuUsPerOp } = await measure(layout, procs, ops, mmapBytes);
        console.log(`round ${r}: ${layout}, ${procs} process(es): ${opsPerSec.toFixed(0)} ops/s, CPU ${cpuUsPerOp.toFixed(1)} µs per op`);
      }
    }
  }
}
