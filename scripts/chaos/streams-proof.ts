/**
 * The streaming proof of issue 15 with real processes (docs/streams-fleet.md, "Proof"): a real
 * redis-server, the emulation's WebSocket and REST endpoints, SQLite store and sink files, and
 * `tickfleet worker` child processes holding 30 streams (24 Binance symbols and 6 Kraken pairs
 * of two, trades + book) with gaps, disconnects, a silence and Kraken checksum corruption on.
 *
 *   node --import tsx scripts/chaos/streams-proof.ts [--chaos-seconds 120] [--kill-every 10]
 *
 * Phases: scale 1 -> 3 workers, 3 -> 1 (SIGTERM), then 3 workers with one SIGKILLed (and replaced)
 * every 10 s. At the end it prints the checks (trade ids contiguous per instrument or each hole on
 * the gap ledger, no trade stored twice, Binance books equal to the emulation's book at their
 * update id, every stream held by exactly one live worker) and, per phase, the longest time any
 * stream's instrument received nothing (from the sink's receive times).
 */
import { hostname } from 'node:os';
import type { Envelope } from '@tickfleet/core';
import { binanceBookAtUpdateId, DEFAULT_SEED } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { StreamLeases } from '@tickfleet/streams';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const CHAOS_MS = arg('chaos-seconds', 120) * 1000;
const KILL_EVERY_MS = arg('kill-every', 10) * 1000;

const BINANCE = [
  'BTC/USDT', 'ETH/USDT', 'BNB/USDT', 'SOL/USDT', 'XRP/USDT', 'ADA/USDT', 'DOGE/USDT', 'AVAX/USDT', 'DOT/USDT', 'LINK/USDT', 'LTC/USDT', 'TRX/USDT',
  'ATOM/USDT', 'NEAR/USDT', 'ETH/BTC', 'BNB/BTC', 'SOL/BTC', 'XRP/BTC', 'BTC/FDUSD', 'BTC/USDC', 'ETH/USDC', 'BTC/EUR', 'ETH/EUR', 'BTC/TRY',
]; // prettier-ignore
const KRAKEN = ['BTC/USD', 'ETH/USD', 'SOL/USD', 'XRP/USD', 'ADA/USD', 'DOGE/USD', 'DOT/USD', 'LTC/USD', 'LINK/USD', 'BTC/EUR', 'ETH/EUR', 'ETH/BTC'];
const defs = [
  ...BINANCE.map((s) => ({ name: `b-${s.replace('/', '-').toLowerCase()}`, venue: 'binance', symbols: [s], bookDepth: 100 })),
  ...Array.from({ length: 6 }, (_, i) => ({ name: `k-${i}`, venue: 'kraken', symbols: KRAKEN.slice(2 * i, 2 * i + 2), bookDepth: 10 })),
];
const log = (line: string): void => void process.stdout.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`);

const fleet = await FleetHarness.start({
  streams: { binance: { gapEvery: 300, disconnectEvery: 500 }, kraken: { gapEvery: 400, disconnectEvery: 800, checksumCorruptionRate: 0.005 } },
});
const redis = createRedisConnection(fleet.redis.url);
const observer = new StreamLeases(redis, 'proof-observer', { prefix: fleet.prefix });
const wsRoot = fleet.mock.url.replace('http://', 'ws://');
const env = {
  TICKFLEET_STREAM_LEASE_TTL_MS: '3000',
  TICKFLEET_STREAMS_POLL_MS: '1000',
  TICKFLEET_BINANCE_WS_URL: `${wsRoot}/binance`,
  TICKFLEET_KRAKEN_WS_URL: `${wsRoot}/kraken/v2`,
  TICKFLEET_STREAM_SILENCE_MS: '3000',
  TICKFLEET_VENUES: 'binance,kraken',
};
let serial = 0;
const live = new Map<string, FleetProcess>();
const phases: Array<{ name: string; fromMs: number; toMs: number; settleMs?: number }> = [];

async function spawnWorker(): Promise<string> {
  const w = fleet.spawn(`worker-${++serial}`, ['worker'], env);
  await fleet.ready(w);
  const id = `${hostname()}-${w.child.pid}`;
  live.set(id, w);
  return id;
}

/** Waits until every stream is held by one of the live workers, each holding at most its fair share plus one; returns the ms it took. */
async function settled(what: string): Promise<number> {
  const t0 = Date.now();
  const share = Math.ceil(defs.length / live.size);
  await waitFor(
    async () => {
      const holders = await observer.holders();
      const per = new Map<string, number>();
      for (const d of defs) {
        const w = holders.get(d.name)?.worker;
        if (!w || !live.has(w)) return false;
        per.set(w, (per.get(w) ?? 0) + 1);
      }
      return [...per.values()].every((n) => n <= share + 1);
    },
    what,
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  return Date.now() - t0;
}

try {
  await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s');
  await fleet.withStore(async (store) => {
    for (const d of defs) await store.streams.upsert({ ...d, channels: ['trades', 'book'] });
  });

  // Scale 1 -> 3 -> 1.
  let t = Date.now();
  await spawnWorker();
  log(`1 worker holds all ${defs.length} streams after ${await settled('one worker holds every stream')} ms`);
  await new Promise((r) => setTimeout(r, 5000));
  t = Date.now();
  await Promise.all([spawnWorker(), spawnWorker()]);
  log(`scale 1 -> 3: rebalanced ${await settled('three workers share the streams')} ms after the two started`);
  await new Promise((r) => setTimeout(r, 5000));
  phases.push({ name: 'scale 1 -> 3', fromMs: t, toMs: Date.now() });
  t = Date.now();
  const leaving = [...live.keys()].slice(1);
  for (const id of leaving) {
    const w = live.get(id)!;
    live.delete(id);
    await fleet.stopCleanly(w);
  }
  log(`scale 3 -> 1 (SIGTERM): streams on the last worker ${await settled('one worker again')} ms after the others exited`);
  await new Promise((r) => setTimeout(r, 5000));
  phases.push({ name: 'scale 3 -> 1', fromMs: t, toMs: Date.now() });

  // Chaos: 3 workers, one SIGKILLed every KILL_EVERY_MS and replaced; a 3 s silence on Binance halfway.
  await Promise.all([spawnWorker(), spawnWorker()]);
  await settled('three workers again');
  t = Date.now();
  let kills = 0;
  // Kills on a fixed schedule (t + k x KILL_EVERY_MS), whatever the replacement's start-up takes.
  while ((kills + 1) * KILL_EVERY_MS <= CHAOS_MS) {
    await new Promise((r) => setTimeout(r, Math.max(0, t + (kills + 1) * KILL_EVERY_MS - Date.now())));
    const ids = [...live.keys()];
    const victim = ids[Math.floor(Math.random() * ids.length)]!;
    const w = live.get(victim)!;
    live.delete(victim);
    w.child.kill('SIGKILL');
    await w.exited;
    kills += 1;
    if (kills === Math.floor(CHAOS_MS / KILL_EVERY_MS / 2)) fleet.mock.patchScenario({ streams: { binance: { silenceForMs: 3000 } } });
    await spawnWorker();
    log(`kill ${kills}: ${victim} SIGKILLed, replaced`);
  }
  const ms = await settled('every stream held after the last kill');
  log(`after the last kill every stream was held again within ${ms} ms`);
  phases.push({ name: `3 workers, SIGKILL every ${KILL_EVERY_MS / 1000} s (${kills} kills)`, fromMs: t, toMs: Date.now() });

  // Faults off; every instrument gets trades after that; one holder per stream among the live workers.
  fleet.mock.patchScenario({
    streams: { binance: { gapEvery: 1e9, disconnectEvery: 1e9 }, kraken: { gapEvery: 1e9, disconnectEvery: 1e9, checksumCorruptionRate: 0 } },
  });
  await new Promise((r) => setTimeout(r, 8000));
  const holders = await observer.holders();
  const oneHolder = defs.every((d) => live.has(holders.get(d.name)?.worker ?? ''));
  for (const w of live.values()) await fleet.stopCleanly(w);

  // Checks against the sink, the ledger and the emulation.
  const ledger = await fleet.withStore((store) => store.gaps.list({ kind: 'trade-ids' }));
  const stored: Envelope[] = await fleet.withSink(async (sink) => {
    const out: Envelope[] = [];
    for await (const { envelope } of sink.reader!.streamEnvelopes({})) out.push(envelope);
    return out;
  });
  let instruments = 0;
  let contiguous = 0;
  let holesOnLedger = 0;
  let holesMissing = 0;
  let duplicates = 0;
  let trades = 0;
  let books = 0;
  let booksWrong = 0;
  const longest = new Map<string, { ms: number; symbol: string }>();
  for (const d of defs) {
    for (const symbol of d.symbols) {
      instruments += 1;
      const ids = stored
        .filter((e) => e.venue === d.venue && e.channel === 'trades' && e.symbol === symbol)
        .map((e) => Number((e.payload as { tradeId: string }).tradeId));
      trades += ids.length;
      duplicates += ids.length - new Set(ids).size;
      const sorted = [...new Set(ids)].sort((a, b) => a - b);
      let holes = 0;
      for (let i = 1; i < sorted.length; i++) {
        const [from, to] = [sorted[i - 1]! + 1, sorted[i]! - 1];
        if (from > to) continue;
        holes += 1;
        const jobId = `${d.venue}:${symbol}:-:trades`;
        if (ledger.some((g) => g.jobId === jobId && g.fromMs <= from && g.toMs >= to + 1)) holesOnLedger += 1;
        else holesMissing += 1;
      }
      if (holes === 0) contiguous += 1;
      if (d.venue === 'binance') {
        for (const b of stored.filter((e) => e.venue === 'binance' && e.channel === 'book' && e.symbol === symbol)) {
          books += 1;
          const truth = binanceBookAtUpdateId(symbol, b.sequence!, DEFAULT_SEED, 20);
          if (JSON.stringify({ bids: b.payload.bids, asks: b.payload.asks }) !== JSON.stringify(truth)) booksWrong += 1;
        }
      }
      // Longest stretch without any record of the instrument, per phase (receive times in the sink).
      const times = stored
        .filter((e) => e.venue === d.venue && e.symbol === symbol && (e.channel === 'trades' || e.channel === 'book'))
        .map((e) => e.receivedAtMs)
        .sort((a, b) => a - b);
      for (const p of phases) {
        const inPhase = times.filter((x) => x >= p.fromMs && x < p.toMs);
        let worst = inPhase.length > 0 ? inPhase[0]! - p.fromMs : p.toMs - p.fromMs;
        for (let i = 1; i < inPhase.length; i++) worst = Math.max(worst, inPhase[i]! - inPhase[i - 1]!);
        if (worst > (longest.get(p.name)?.ms ?? -1)) longest.set(p.name, { ms: worst, symbol: `${d.venue} ${symbol}` });
      }
    }
  }
  const events = stored.filter((e) => e.channel === 'stream_events').map((e) => (e.payload as { event: string }).event);
  const unhealedByVenue = stored
    .filter((e) => e.channel === 'stream_events' && (e.payload as { event: string }).event === 'unhealed')
    .reduce((m, e) => m.set(e.venue, (m.get(e.venue) ?? 0) + 1), new Map<string, number>());
  const count = (k: string): number => events.filter((e) => e === k).length;
  const mock = fleet.mock.stats().streams;
  log('--- checks');
  log(`instruments ${instruments}: ${contiguous} with contiguous trade ids; holes on the ledger ${holesOnLedger}, holes NOT on the ledger ${holesMissing}`);
  log(`trades stored ${trades}, stored twice ${duplicates}`);
  log(`binance books stored ${books}, not equal to the emulation at their update id ${booksWrong}`);
  log(`every stream held by exactly one live worker at the end: ${oneHolder}`);
  log(
    `stream_events: gap ${count('gap')}, healed ${count('healed')}, unhealed ${count('unhealed')}, resync ${count('resync')}, checksum-mismatch ${count('checksum-mismatch')}; unhealed by venue ${JSON.stringify(Object.fromEntries(unhealedByVenue))}`,
  );
  log(
    `emulation: binance gaps ${mock.binance.gapsInjected}, disconnects ${mock.binance.disconnects}, silenced ${mock.binance.silencedMessages}; kraken gaps ${mock.kraken.gapsInjected}, disconnects ${mock.kraken.disconnects}, checksum corruptions ${mock.kraken.checksumCorruptions}`,
  );
  log('--- longest per-stream gap in time (no record of an instrument received)');
  for (const p of phases) log(`${p.name}: ${longest.get(p.name)?.ms ?? 0} ms (${longest.get(p.name)?.symbol ?? '-'})`);
  const ok = holesMissing === 0 && duplicates === 0 && booksWrong === 0 && oneHolder;
  log(ok ? 'PROOF PASSED' : 'PROOF FAILED');
  process.exitCode = ok ? 0 : 1;
} finally {
  redis.disconnect();
  await fleet.stop();
}
