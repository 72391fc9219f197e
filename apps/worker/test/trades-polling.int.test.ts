import { binanceModel, coinbaseModel, DEFAULT_SEED, krakenModel, lastClosedTick, STREAM_TICK_MS, type StreamBookModel } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

/** Binance's weight limit in this test: 120 per 10 s, under 5 polls of 25 a second asked for. */
const BINANCE_LIMIT = 120;
const KRAKEN_LIMIT = 6;
const COINBASE_LIMIT = 5;
const WINDOW_MS = 10_000;

/** A job's trades as stored: ids (as numbers) in id order, with their times. */
interface Stored {
  ids: number[];
  times: Map<number, number>;
  rows: number;
}

/**
 * Trades jobs end to end with real processes: a scheduler polling every 2 s and two `tickfleet worker`
 * processes collect Binance (historicalTrades by id), Kraken and Coinbase (the CCXT engine) trades
 * from each job's `since` under budgets smaller than the polls ask for. The sink then holds exactly
 * the emulation's trades from `since` to the newest stored, each once, and no venue window went over
 * its limit.
 */
describe('fleet: trades jobs poll venue REST trades', () => {
  let fleet: FleetHarness;

  beforeAll(async () => {
    fleet = await FleetHarness.start({
      venues: {
        binance: { limit: { weight: BINANCE_LIMIT, windowMs: WINDOW_MS } },
        kraken: { limit: { requests: KRAKEN_LIMIT, windowMs: WINDOW_MS } },
        coinbase: { limit: { requests: COINBASE_LIMIT, windowMs: 1000 } },
      },
    });
  });
  afterAll(() => fleet.stop());

  it('stores every trade from since to the cursor once, 0 requests over the limits', async () => {
    await fleet.upsertConnector('binance', '--limit', String(BINANCE_LIMIT), '--period', '10s', '--max-inflight', '2');
    await fleet.upsertConnector('kraken', '--policy', 'gcra', '--limit', String(KRAKEN_LIMIT), '--period', '10s', '--max-inflight', '2');
    await fleet.upsertConnector('coinbase', '--limit', String(COINBASE_LIMIT), '--period', '1s', '--max-inflight', '2');
    const since = Date.now() - 90_000;
    const jobs = [
      { venue: 'binance', symbol: 'BTC/USDT', model: binanceModel('BTCUSDT', DEFAULT_SEED) },
      { venue: 'binance', symbol: 'ETH/USDT', model: binanceModel('ETHUSDT', DEFAULT_SEED) },
      { venue: 'kraken', symbol: 'BTC/USD', model: krakenModel('BTC/USD', DEFAULT_SEED) },
      { venue: 'coinbase', symbol: 'BTC/USD', model: coinbaseModel('BTC/USD', DEFAULT_SEED) },
    ];
    for (const j of jobs) await fleet.ok('jobs', 'add', j.venue, 'trades', j.symbol, '--since', new Date(since).toISOString());
    fleet.mock.reset();
    const scheduler = fleet.spawnScheduler({ TICKFLEET_SCHEDULER_TRADES_EVERY_MS: '2s' });
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    // Every job polled past a moment after the workers started: caught up, then polled again.
    const mark = Date.now() + 5000;
    const reached = (j: (typeof jobs)[number], cursor: number | null | undefined): boolean =>
      cursor != null && (j.venue === 'kraken' ? cursor >= mark : cursor >= j.model.lastTradeId(lastClosedTick(mark)));
    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          for (const j of jobs) if (!reached(j, (await store.jobs.get(`${j.venue}:${j.symbol}:-:trades`))?.cursor)) return false;
          return true;
        }),
      'every trades job past the mark',
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await fleet.stopCleanly(scheduler);
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));

    for (const venue of ['binance', 'kraken', 'coinbase'] as const) {
      const stats = fleet.mock.stats().venues[venue];
      expect({ venue, over: stats.overLimitRequests, errors: stats.responses4xx + stats.responses5xx }).toEqual({ venue, over: 0, errors: 0 });
    }
    expect(fleet.mock.stats().venues.binance.maxWindowWeight).toBeLessThanOrEqual(BINANCE_LIMIT);
    for (const j of jobs) {
      const stored = await storedTrades(fleet, j.venue, j.symbol);
      const job = await fleet.withStore((store) => store.jobs.get(`${j.venue}:${j.symbol}:-:trades`));
      // Coinbase has no time query: its first poll is the newest page (trades from since on within it).
      const want = truth(j.model, since, stored.ids.at(-1)!);
      expect({ job: job!.id, rows: stored.rows, distinct: stored.ids.length }).toEqual({ job: job!.id, rows: want.length, distinct: want.length });
      expect(stored.ids).toEqual(want.map((t) => t.id));
      expect(want.every((t) => stored.times.get(t.id) === t.timeMs)).toBe(true);
      expect(stored.ids.at(-1)).toBeGreaterThanOrEqual(j.venue === 'kraken' ? want.findLast((t) => t.timeMs <= job!.cursor!)!.id : job!.cursor!);
      expect(await fleet.withStore((store) => store.gaps.list({ jobId: job!.id, open: true }))).toEqual([]);
    }
  }, 240_000);

  it("backfills a time range of trades in 1-minute units: the emulation's trades in it, each once", async () => {
    const from = Math.floor(Date.now() / 1000) * 1000 - 20 * 60_000;
    const to = from + 12 * 60_000;
    const out = await fleet.ok(
      'backfill',
      'binance',
      'SOL/USDT',
      '--trades',
      '--from',
      new Date(from).toISOString(),
      '--to',
      new Date(to).toISOString(),
      '--json',
    );
    const backfill = JSON.parse(out) as { id: string; jobId: string; unitsTotal: number };
    expect(backfill).toMatchObject({ jobId: 'binance:SOL/USDT:-:trades', unitsTotal: 12 });
    fleet.mock.reset();
    const workers = [0, 1].map((i) => fleet.spawn(`bf-worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    await fleet.backfillDone(backfill.id, `backfill ${backfill.id} done`, { timeoutMs: 120_000, venue: 'binance' });
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
    const model = binanceModel('SOLUSDT', DEFAULT_SEED);
    const want = truth(model, from, model.lastTradeId(lastClosedTick(to))).filter((t) => t.timeMs < to);
    const stored = await storedTrades(fleet, 'binance', 'SOL/USDT');
    expect(want.length).toBeGreaterThan(4000);
    expect(stored.rows).toBe(want.length);
    expect(stored.ids).toEqual(want.map((t) => t.id));
    const stats = fleet.mock.stats().venues.binance;
    expect({ over: stats.overLimitRequests, errors: stats.responses4xx + stats.responses5xx }).toEqual({ over: 0, errors: 0 });
    // the job a backfill creates collects history only
    expect(await fleet.withStore((store) => store.jobs.get('binance:SOL/USDT:-:trades'))).toMatchObject({ enabled: false, cursor: null });
  }, 240_000);
});

/** The emulation's trades with `time >= sinceMs` and id up to `lastId`, ascending. */
function truth(model: StreamBookModel, sinceMs: number, lastId: number): Array<{ id: number; timeMs: number }> {
  const firstId = Math.max(1, model.lastTradeId(Math.floor(sinceMs / STREAM_TICK_MS) - 2) + 1);
  return model
    .tradesBetween(firstId, lastId)
    .filter((t) => t.timeMs >= sinceMs)
    .map((t) => ({ id: t.id, timeMs: t.timeMs }));
}

async function storedTrades(fleet: FleetHarness, venue: string, symbol: string): Promise<Stored> {
  return fleet.withSink(async (sink) => {
    const times = new Map<number, number>();
    let rows = 0;
    for await (const { envelope } of sink.reader!.streamEnvelopes({ venue, channel: 'trades', symbol })) {
      rows += 1;
      const p = envelope.payload as { tradeId: string; timeMs: number };
      times.set(Number(p.tradeId), p.timeMs);
    }
    return { ids: [...times.keys()].sort((a, b) => a - b), times, rows };
  });
}
