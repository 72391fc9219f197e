/**
 * Isolation benchmark: Binance backfill throughput (candles/s end to end: emulated venue -> two
 * worker processes -> SQLite sink) alone, and again while Polygon answers in 3-8 s at 5 requests
 * per minute with its own backfills queued on the same workers. The ratio is the isolation figure
 * (1.00 = a slow venue costs a fast one nothing); the design target is within 5%.
 *
 *   node --import tsx scripts/bench/isolation.ts [--days 30] [--rounds 3]
 *
 * Each round uses a fresh fleet (redis-server, emulations, temp SQLite files, two workers) that is
 * warmed up by a discarded backfill; medians over the rounds are printed.
 */
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const DAYS = arg('days', 30);
const ROUNDS = arg('rounds', 3);
const DAY = 86_400_000;

/** Runs one Binance backfill of DAYS x 1440 candles on the running fleet; returns candles/s. */
async function binanceBackfill(fleet: FleetHarness, symbol: string, to: number): Promise<number> {
  const out = await fleet.backfill('binance', symbol, '1m', to - DAYS * DAY, to, '--json');
  const id = (JSON.parse(out) as { id: string }).id;
  const started = performance.now();
  await waitFor(() => fleet.withStore(async (store) => (await store.backfills.get(id))?.status === 'done'), 'binance backfill', {
    timeoutMs: 600_000,
    intervalMs: 50,
  });
  return (DAYS * 1440) / ((performance.now() - started) / 1000);
}

/**
 * One round on one warmed-up fleet: a warm-up backfill (discarded), Binance alone, then Binance
 * again while Polygon's slow units hold their own slots on the same two worker processes.
 */
async function round(): Promise<{ alone: number; withPolygon: number }> {
  const fleet = await FleetHarness.start({
    venues: {
      binance: { latencyMs: 20 },
      polygon: { latencyMs: { min: 3000, max: 8000 }, limit: { requests: 5, windowMs: 60_000 } },
    },
  });
  try {
    await fleet.upsertConnector('binance', '--limit', '1000000', '--period', '10s', '--max-inflight', '4');
    await fleet.upsertConnector('polygon', '--limit', '5', '--period', '60s', '--headroom', '1', '--max-inflight', '4');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    for (const i of [0, 1]) fleet.spawn(`worker-${i}`, ['worker'], { LOG_LEVEL: 'warn' });
    await binanceBackfill(fleet, 'ETH/USDT', to);
    const alone = await binanceBackfill(fleet, 'BTC/USDT', to);
    for (const s of ['AAPL', 'MSFT', 'NVDA', 'TSLA']) {
      await fleet.backfill('polygon', s, '1m', to - 60 * DAY, to);
    }
    await waitFor(() => fleet.mock.stats().venues.polygon.requests >= 2, 'polygon in flight', { timeoutMs: 60_000 });
    const withPolygon = await binanceBackfill(fleet, 'SOL/USDT', to);
    return { alone, withPolygon };
  } finally {
    await fleet.stop();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const alone: number[] = [];
const withPolygon: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const result = await round();
  alone.push(result.alone);
  withPolygon.push(result.withPolygon);
  process.stderr.write(`round ${r + 1}: alone ${alone[r]!.toFixed(0)} candles/s, with slow polygon ${withPolygon[r]!.toFixed(0)} candles/s\n`);
}
const ratios = alone.map((a, i) => withPolygon[i]! / a);
console.log(`| case | binance candles/s (median of ${ROUNDS} rounds) | ratio (median of per-round ratios; range) |`);
console.log('| --- | ---: | ---: |');
console.log(`| binance alone (baseline) | ${median(alone).toFixed(0)} | 1.00 |`);
console.log(
  `| binance + polygon at 3-8 s, 5 req/min | ${median(withPolygon).toFixed(0)} | ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) |`,
);
