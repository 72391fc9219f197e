/**
 * Persistence pipeline benchmark: records/s into each sink adapter at batch sizes 1, 100 and
 * 1000, spool append MB/s with and without fsync, and spool replay drain rate. Each figure is
 * also given as a ratio to a baseline measured in the same run on the same machine:
 * - sinks: `appendFileSync` of the same records as JSON lines, one call per batch (no fsync);
 * - spool: `appendFileSync` (+ `fsyncSync` when the spool fsyncs) of the same frame bytes;
 * - replay: direct SQLite sink writes of the same records in batches of the replay size;
 * - candle pages: the same 1,000-candle pages inserted into the same table by better-sqlite3 one
 *   statement per row in one transaction (what the SQLite sink did before it inserted candles
 *   50 rows to a statement); CPU per page, interleaved rounds, medians.
 *
 *   node --import tsx scripts/bench/sinks.ts [--quick]
 *
 * MongoDB runs against MONGO_URL when set, else the in-repo wire server (an in-memory test
 * server: its figure measures the adapter plus that server, not a real mongod).
 */
import { appendFileSync, closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tempDir } from '@tickfleet/testkit';
import { keyEnvelope, openSink, ReplayWorker, Spool, type Sink } from '@tickfleet/sinks';
import { candleEnvelope, tradeEnvelope, type Candle, type Envelope } from '@tickfleet/core';
import { openBetterSqlite3 } from './fixtures/better-sqlite3.js';

const quick = process.argv.includes('--quick');
const T0 = Date.UTC(2024, 0, 1);
let serial = 0;

function records(n: number): Envelope[] {
  return Array.from({ length: n }, () => {
    const i = serial++;
    return tradeEnvelope(
      { venue: 'binance', symbol: 'BTC/USDT', tradeId: String(i), timeMs: T0 + i, price: '43210.12', size: '0.00125', side: i % 2 ? 'buy' : 'sell' },
      `trade:binance:BTC/USDT:${i}`,
      T0 + i + 3,
    );
  });
}

/** Records to write per batch size: enough for a stable figure, bounded so the run stays short. */
function countFor(batch: number, adapter: string): number {
  const base = batch === 1 ? 2_000 : batch === 100 ? 20_000 : 50_000;
  const scaled = adapter === 'mongodb' ? Math.min(base, batch === 1 ? 1_000 : 10_000) : base;
  return quick ? Math.ceil(scaled / 10) : scaled;
}

async function rate(total: number, batch: number, write: (b: Envelope[]) => Promise<unknown> | unknown): Promise<number> {
  const all = records(total);
  const started = performance.now();
  for (let i = 0; i < all.length; i += batch) await write(all.slice(i, i + batch));
  return total / ((performance.now() - started) / 1000);
}

/** 1,000 candles of one page, four symbols taking turns, each page the next 1,000 minutes of its symbol. */
function candlePage(page: number): Envelope[] {
  const symbol = ['BTC/USDT', 'ETH/USDT', 'SOL/USDT', 'XRP/USDT'][page % 4]!;
  const from = T0 + Math.floor(page / 4) * 1000 * 60_000;
  return Array.from({ length: 1000 }, (_, i) => {
    const openTime = from + i * 60_000;
    const c: Candle = {
      venue: 'binance',
      symbol,
      timeframe: '1m',
      openTime,
      open: '43123.45000000',
      high: '43200.10000000',
      low: '43000.00000000',
      close: '43111.11000000',
      volume: '12.34567000',
      trades: 1234,
    };
    return candleEnvelope(c, openTime + 60_100, openTime + 59_999);
  });
}

/** Median CPU ms per page of each side over `rounds` interleaved rounds of `pages` pages, each on fresh files. */
async function candlePages(rounds: number, pages: number): Promise<{ sink: number; baseline: number }> {
  const cpuMs = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const sinkRuns: number[] = [];
  const baseRuns: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const work = Array.from({ length: pages }, (_, p) => candlePage(p));
    // The baseline writes into a table the sink made, so both use the same schema and pragmas.
    const basePath = dir.file(`candles-base-${r}.db`);
    await (await openSink(`sqlite://${basePath}`)).close();
    const db = openBetterSqlite3(basePath);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    const insert = db.prepare(
      `INSERT INTO candles (venue, symbol, timeframe, open_time, open, high, low, close, volume, trades, server_time_ms, received_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    const tx = db.transaction((page: Envelope[]) => {
      for (const e of page) {
        const c = e.payload as Candle;
        insert.run(
          c.venue,
          c.symbol,
          c.timeframe,
          c.openTime,
          c.open,
          c.high,
          c.low,
          c.close,
          c.volume,
          c.trades ?? null,
          e.serverTimeMs ?? null,
          e.receivedAtMs,
        );
      }
    });
    let started = cpuMs();
    for (const page of work) tx.immediate(page);
    baseRuns.push((cpuMs() - started) / pages);
    db.close();
    const keyed = work.map((page) => page.map(keyEnvelope));
    const sink = await openSink(`sqlite://${dir.file(`candles-sink-${r}.db`)}`);
    started = cpuMs();
    for (const page of keyed) await sink.writeKeyed(page);
    sinkRuns.push((cpuMs() - started) / pages);
    await sink.close();
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { sink: median(sinkRuns), baseline: median(baseRuns) };
}

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
const rows: string[] = [];
const dir = tempDir('bench-sinks-');

async function mongoUrl(): Promise<{ url: string; stop(): Promise<void> }> {
  if (process.env.MONGO_URL) {
    const u = new URL(process.env.MONGO_URL);
    u.pathname = `/bench${randomUUID().slice(0, 8)}`;
    return { url: u.toString(), stop: async () => undefined };
  }
  const { startMongoWire } = await import('@tickfleet/mongo-wire');
  const h = await startMongoWire();
  return { url: `${h.url}bench`, stop: () => h.stop() };
}

try {
  // 1. Sinks.
  rows.push('| adapter | batch | records | records/s | x baseline |', '| --- | ---: | ---: | ---: | ---: |');
  const mongo = await mongoUrl();
  for (const batch of [1, 100, 1000]) {
    const basePath = dir.file(`baseline-${batch}.jsonl`);
    const baseline = await rate(countFor(batch, 'baseline'), batch, (b) => appendFileSync(basePath, b.map((e) => `${JSON.stringify(e)}\n`).join('')));
    rows.push(`| baseline appendFileSync | ${batch} | ${countFor(batch, 'baseline')} | ${fmt(baseline)} | 1.00 |`);
    const sinks: Array<[string, () => Promise<Sink>]> = [
      ['sqlite', () => openSink(`sqlite://${dir.file(`s-${batch}.db`)}`)],
      ['jsonl', () => openSink(`jsonl://${dir.file(`j-${batch}`)}`)],
      ['mongodb', () => openSink(`${mongo.url}${batch}`)],
    ];
    for (const [name, open] of sinks) {
      const sink = await open();
      const n = countFor(batch, name);
      const r = await rate(n, batch, (b) => sink.write(b));
      await sink.close();
      rows.push(`| ${name} | ${batch} | ${n} | ${fmt(r)} | ${(r / baseline).toFixed(2)} |`);
    }
  }
  await mongo.stop();

  // 2. Spool append.
  rows.push('', '| spool append (batches of 100) | MB/s | x baseline |', '| --- | ---: | ---: |');
  for (const fsync of [false, true]) {
    const n = quick ? 5_000 : fsync ? 20_000 : 100_000;
    const recs = records(n);
    const bytes = recs.reduce((s, e) => s + 4 + Buffer.byteLength(JSON.stringify(e)), 0);
    const fd = openSync(dir.file(`raw-${fsync}.dat`), 'a');
    let started = performance.now();
    for (let i = 0; i < n; i += 100) {
      const chunk = Buffer.concat(
        recs.slice(i, i + 100).map((e) => {
          const body = Buffer.from(JSON.stringify(e));
          const h = Buffer.alloc(4);
          h.writeUInt32LE(body.length);
          return Buffer.concat([h, body]);
        }),
      );
      writeSync(fd, chunk);
      if (fsync) fsyncSync(fd);
    }
    const baseMBs = bytes / 1e6 / ((performance.now() - started) / 1000);
    closeSync(fd);
    const spool = Spool.open({ dir: dir.file(`spool-${fsync}`), fsync });
    started = performance.now();
    for (let i = 0; i < n; i += 100) await spool.append(recs.slice(i, i + 100));
    const mbs = bytes / 1e6 / ((performance.now() - started) / 1000);
    await spool.close();
    rows.push(`| baseline write${fsync ? '+fsync' : ''} | ${mbs > 0 ? baseMBs.toFixed(1) : '-'} | 1.00 |`);
    rows.push(`| spool, fsync ${fsync ? 'on' : 'off'} | ${mbs.toFixed(1)} | ${(mbs / baseMBs).toFixed(2)} |`);
  }

  // 3. Replay drain into SQLite.
  const n = quick ? 5_000 : 50_000;
  const recs = records(n);
  const direct = await openSink(`sqlite://${dir.file('direct.db')}`);
  const directRate = await (async () => {
    const started = performance.now();
    for (let i = 0; i < n; i += 500) await direct.write(recs.slice(i, i + 500));
    return n / ((performance.now() - started) / 1000);
  })();
  await direct.close();
  const spool = Spool.open({ dir: dir.file('spool-replay'), fsync: false, maxSegmentBytes: 4 * 1024 * 1024 });
  for (let i = 0; i < n; i += 1000) await spool.append(recs.slice(i, i + 1000));
  const sink = await openSink(`sqlite://${dir.file('replay.db')}`);
  const started = performance.now();
  const r = await new ReplayWorker(spool, sink, { batchSize: 500 }).drain();
  const drain = r.records / ((performance.now() - started) / 1000);
  await spool.close();
  await sink.close();
  rows.push('', '| replay drain into sqlite (batches of 500) | records/s | x baseline |', '| --- | ---: | ---: |');
  rows.push(`| baseline: direct sqlite writes | ${fmt(directRate)} | 1.00 |`);
  rows.push(`| replay of ${r.records} spooled records | ${fmt(drain)} | ${(drain / directRate).toFixed(2)} |`);

  // 4. 1,000-candle pages into SQLite: the sink's multi-row inserts against one statement per row.
  rows.push('', '| 1,000-candle pages into sqlite | CPU ms per page (median) | x baseline |', '| --- | ---: | ---: |');
  const cpu = await candlePages(quick ? 1 : 5, quick ? 20 : 200);
  rows.push(`| baseline: one INSERT per row, one transaction per page | ${cpu.baseline.toFixed(2)} | 1.00 |`);
  rows.push(`| sqlite sink (\`writeKeyed\`) | ${cpu.sink.toFixed(2)} | ${(cpu.sink / cpu.baseline).toFixed(2)} |`);
} finally {
  dir.remove();
}
process.stdout.write(`${rows.join('\n')}\n`);
