/**
 * Stream ingest benchmark (README benchmark table, docs/streams-fleet.md): messages per second one
 * worker's stream runner takes end to end (WebSocket, parse, trade-id and book checks, pipeline,
 * SQLite sink, Redis checkpoint) against a bare `ws` client that only parses the same messages,
 * in the same run, rounds interleaved. The emulation runs on a ManualClock moved ahead ten
 * emulated seconds at a time, the next step only once the consumer has caught up (the bare
 * client: every message parsed; the runner: every pair's checkpoint at the step's last trade,
 * i.e. stored in SQLite), so each side is measured flat out.
 *
 *   node --import tsx scripts/bench/streams-ingest.ts [--seconds 5] [--rounds 3] [--symbols 10]
 *
 * The runner's REST calls (one depth snapshot per symbol and round) pass a gate that spends
 * nothing: this measures ingest, not budgets.
 */
import { WebSocket } from 'ws';
import { binanceModel, DEFAULT_BINANCE_SYMBOLS, DEFAULT_SEED, lastClosedTick, startMockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { openSink, Pipeline } from '@tickfleet/sinks';
import { openStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { ManualClock, startRedis, tempDir, waitFor } from '@tickfleet/testkit';
import { StreamCheckpoints, StreamMetrics, StreamRunner } from '@tickfleet/streams';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
const seconds = arg('seconds', 5);
const rounds = arg('rounds', 3);
const symbolCount = Math.min(arg('symbols', 10), DEFAULT_BINANCE_SYMBOLS.length);
const STEP_MS = 10_000;
const pairs = DEFAULT_BINANCE_SYMBOLS.slice(0, symbolCount);
const streamNames = pairs.flatMap((p) => {
  const s = p.replace('/', '').toLowerCase();
  return [`${s}@trade`, `${s}@depth@100ms`];
});

const clock = new ManualClock(Date.UTC(2024, 0, 15, 8));
const mv = await startMockVenue({ clock });
const redis = await startRedis();
const dir = tempDir('streams-ingest-');
const store = await openStore(dir.sqliteUrl('state.db'));
const sink = await openSink(dir.sqliteUrl('data.db'));
const pipeline = new Pipeline({ sink });
const connection = createRedisConnection(redis.url);
const prefix = redis.namespace();
const checkpoints = new StreamCheckpoints(connection, prefix);
await store.connectors.upsert({ venue: 'binance', baseUrl: mv.baseUrl('binance'), rateLimit: { limit: 1_000_000, periodMs: 60_000 } });
await store.streams.upsert({ name: 'bench', venue: 'binance', symbols: pairs, channels: ['trades', 'book'], bookDepth: 100 });
const sent = (): number => mv.stats().streams.binance.messagesSent;

/** Moves the clock a step at a time for `seconds` of wall time, each step once `caughtUp()`; returns messages/s. */
async function drive(caughtUp: () => Promise<boolean> | boolean): Promise<number> {
  const first = sent();
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    const due = sent();
    clock.advance(STEP_MS);
    while (sent() === due || !(await caughtUp())) await new Promise((r) => setTimeout(r, 1));
  }
  return (sent() - first) / ((performance.now() - started) / 1000);
}

async function bareRound(): Promise<number> {
  const ws = new WebSocket(`${mv.url.replace('http://', 'ws://')}/binance/stream?streams=${streamNames.join('/')}`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let received = 0;
  const base = sent();
  ws.on('message', (data: Buffer) => {
    JSON.parse(data.toString('utf8'));
    received += 1;
  });
  const rate = await drive(() => base + received >= sent());
  ws.terminate();
  return rate;
}

async function runnerRound(): Promise<number> {
  // The bare round moved the emulation on: a checkpoint from the last round would have the new session heal all of it from REST.
  await connection.del(checkpoints.key('bench'));
  const runner = new StreamRunner({
    connection,
    prefix,
    workerId: 'bench-worker',
    store,
    pipeline,
    gate: { beforeRequest: async () => undefined },
    logger: createLogger({ role: 'worker', level: 'silent' }),
    metrics: new StreamMetrics(createRegistry('worker')),
    endpoints: { binanceWsUrl: `${mv.url.replace('http://', 'ws://')}/binance`, krakenWsUrl: 'ws://127.0.0.1:1' },
    leaseTtlMs: 3000,
    // the wall clock barely moves while the emulated one runs ahead: no silence timeouts
    silenceTimeoutMs: 600_000,
  });
  await runner.start();
  // Connected; its books sync on the first diffs, which come once the clock moves.
  await waitFor(() => (runner.health()[0]?.connectedSince ?? null) !== null, 'the runner connected', { timeoutMs: 30_000 });
  const stored = async (): Promise<boolean> => {
    const tick = lastClosedTick(clock.now());
    const at = await checkpoints.read('bench');
    return pairs.every((p) => (at[p] ?? -1) >= binanceModel(p, DEFAULT_SEED).lastTradeId(tick));
  };
  const rate = await drive(stored);
  await runner.stop();
  return rate;
}

const bare: number[] = [];
const worker: number[] = [];
for (let r = 0; r < rounds; r++) {
  bare.push(await bareRound());
  worker.push(await runnerRound());
  process.stdout.write(`round ${r + 1}: bare ws ${Math.round(bare[r]!)} msg/s, worker end to end ${Math.round(worker[r]!)} msg/s\n`);
}
const stats = await sink.reader!.countEnvelopes({ channel: 'trades' });
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `streams ingest: ${symbolCount} symbols x (trade + depth@100ms) on one combined connection, ${rounds} interleaved rounds of ${seconds} s; ${stats} trades stored\n` +
    `| consumer | messages/s (median of rounds) | range |\n| --- | ---: | ---: |\n` +
    `| bare \`ws\` client, JSON.parse only | ${Math.round(median(bare))} | ${Math.round(Math.min(...bare))}-${Math.round(Math.max(...bare))} |\n` +
    `| worker stream runner into SQLite | ${Math.round(median(worker))} | ${Math.round(Math.min(...worker))}-${Math.round(Math.max(...worker))} |`,
);
connection.disconnect();
await pipeline.close();
await sink.close();
await store.close();
await mv.stop();
await redis.stop();
dir.remove();
