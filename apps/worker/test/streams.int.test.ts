import { hostname } from 'node:os';
import type { Envelope } from '@tickfleet/core';
import { binanceBookAtUpdateId, DEFAULT_SEED } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { StreamLeases, type StreamHolder } from '@tickfleet/streams';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, workerHealthz } from '@tickfleet/testkit/fleet';

const PAIRS = ['BTC/USDT', 'ETH/USDT', 'BNB/USDT', 'SOL/USDT', 'XRP/USDT', 'ADA/USDT'];
const STREAMS = PAIRS.map((p) => `s-${p.split('/')[0]!.toLowerCase()}`);

/**
 * Streams on the fleet with real processes: two `tickfleet worker`s hold six Binance streams
 * (trades + book) against the emulation's WebSocket endpoints with sequence gaps and disconnects
 * on; one worker is SIGKILLed mid-run and the other takes its streams, resuming from their
 * checkpoints. At the end every symbol's stored trade ids are contiguous (any hole is on the gap
 * ledger), no trade is stored twice, each stream was held by exactly one live worker, and every
 * stored book equals the emulation's book at its update id.
 */
describe('fleet: streams held by workers, one SIGKILLed', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ streams: { binance: { gapEvery: 50, disconnectEvery: 150 } } });
  });
  afterAll(() => fleet.stop());

  it('keeps every trade, heals the hand-over, and each stream has one holder', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s');
    for (let i = 0; i < PAIRS.length; i++) {
      await fleet.ok('streams', 'add', STREAMS[i]!, '--venue', 'binance', '--symbols', PAIRS[i]!, '--channels', 'trades,book', '--book-depth', '100');
    }
    const env = {
      TICKFLEET_STREAM_LEASE_TTL_MS: '1500',
      TICKFLEET_STREAMS_POLL_MS: '500',
      TICKFLEET_BINANCE_WS_URL: `${fleet.mock.url.replace('http://', 'ws://')}/binance`,
      TICKFLEET_VENUES: 'binance',
    };
    const workers = [fleet.spawn('worker-a', ['worker'], env), fleet.spawn('worker-b', ['worker'], env)];
    await Promise.all(workers.map((w) => fleet.ready(w)));
    const ids = new Map(workers.map((w) => [`${hostname()}-${w.child.pid}`, w]));

    const redis = createRedisConnection(fleet.redis.url);
    const reader = new StreamLeases(redis, 'test-reader', { prefix: fleet.prefix });
    try {
      // Both workers hold their fair share (3 each): every stream has exactly one holder, a live worker.
      const spread = async (live: string[]): Promise<Map<string, StreamHolder>> => {
        let holders = new Map<string, StreamHolder>();
        await waitFor(
          async () => {
            holders = await reader.holders();
            const per = live.map((w) => [...holders.values()].filter((h) => h.worker === w).length);
            return STREAMS.every((s) => live.includes(holders.get(s)?.worker ?? '')) && per.every((n) => n === STREAMS.length / live.length);
          },
          `streams spread over ${live.join(', ')}`,
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        return holders;
      };
      const first = await spread([...ids.keys()]);
      // Faults happen: trades flow, gaps and disconnects are injected by the emulation.
      await waitFor(
        () => {
          const s = fleet.mock.stats().streams.binance;
          return s.gapsInjected >= 6 && s.disconnects >= 2;
        },
        'gaps and disconnects injected',
        { timeoutMs: 30_000, intervalMs: 200 },
      );

      const [victimId] = [...first.values()].map((h) => h.worker);
      const victim = ids.get(victimId!)!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      const survivorId = [...ids.keys()].find((id) => id !== victimId)!;
      const survivor = ids.get(survivorId)!;
      await spread([survivorId]);
      // Let the survivor run its six streams a while, faults still on, then turn them off and let the tails arrive.
      const disconnectsAtTakeover = fleet.mock.stats().streams.binance.disconnects;
      await waitFor(() => fleet.mock.stats().streams.binance.disconnects >= disconnectsAtTakeover + 1, 'the survivor reconnects through faults', {
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      // /healthz of the survivor and tickfleet status --json both show the six streams, held by it, with live counters.
      const health = await workerHealthz<{
        streams: Array<{ name: string; state: string; messages: number; reconnects: number; timeQuality: { skewP50Ms: number | null } }>;
        persistence: { spool: { bytes: number } };
        venues: Array<{ venue: string; cap: number; localConcurrency: number; inflight: number }>;
      }>(survivor);
      expect(health.streams.map((h) => h.name).sort()).toEqual([...STREAMS].sort());
      // Its share of binance's cap: ceil(cap / live workers), the killed worker counted until its beat ages out.
      const binance = health.venues.find((v) => v.venue === 'binance')!;
      expect([Math.ceil(binance.cap / 2), binance.cap]).toContain(binance.localConcurrency);
      expect(binance.inflight).toBeGreaterThanOrEqual(0);
      // BullMQ never runs more of a venue's units in one worker than its share, itself at most the cap.
      expect(binance.inflight).toBeLessThanOrEqual(binance.cap);
      expect(health.streams.every((h) => h.messages > 0 && h.timeQuality.skewP50Ms !== null)).toBe(true);
      expect(health.persistence.spool.bytes).toBe(0);
      const status = JSON.parse(await fleet.ok('status', '--json')) as {
        streams: Array<{ name: string; holder: { worker: string } | null; live: { state: string } | null }>;
      };
      expect(status.streams.map((s) => [s.name, s.holder?.worker, typeof s.live?.state])).toEqual([...STREAMS].sort().map((n) => [n, survivorId, 'string']));
      fleet.mock.patchScenario({ streams: { binance: { gapEvery: 1_000_000_000, disconnectEvery: 1_000_000_000 } } });
      const settledAt = Date.now();
      await waitFor(() => storedTradesSince(fleet, settledAt), 'trades stored after the faults ended', { timeoutMs: 20_000, intervalMs: 300 });
      await fleet.stopCleanly(survivor);

      const ledger = await fleet.withStore((store) => store.gaps.list({ kind: 'trade-ids' }));
      const stored = await fleet.withSink(async (sink) => {
        const out: Envelope[] = [];
        for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'binance' })) out.push(envelope);
        return out;
      });
      for (const pair of PAIRS) {
        const trades = stored.filter((e) => e.channel === 'trades' && e.symbol === pair).map((e) => Number((e.payload as { tradeId: string }).tradeId));
        expect(trades.length).toBeGreaterThan(20);
        // No trade twice.
        expect(new Set(trades).size).toBe(trades.length);
        // Contiguous from the first stored id to the last, except holes the gap ledger names.
        const sorted = [...trades].sort((a, b) => a - b);
        const holes: Array<[number, number]> = [];
        for (let i = 1; i < sorted.length; i++) if (sorted[i]! > sorted[i - 1]! + 1) holes.push([sorted[i - 1]! + 1, sorted[i]! - 1]);
        const onLedger = ledger.filter((g) => g.jobId === `binance:${pair}:-:trades`);
        for (const [from, to] of holes) expect(onLedger.some((g) => g.fromMs <= from && g.toMs >= to + 1)).toBe(true);
        // Every stored book equals the emulation's book at its update id.
        const books = stored.filter((e) => e.channel === 'book' && e.symbol === pair);
        expect(books.length).toBeGreaterThan(2);
        for (const b of books.slice(-3)) {
          expect({ bids: b.payload.bids, asks: b.payload.asks }).toEqual(binanceBookAtUpdateId(pair, b.sequence!, DEFAULT_SEED, 20));
        }
      }
      // The breaks were seen and recorded: gaps healed from REST, books resynchronised.
      const events = stored.filter((e) => e.channel === 'stream_events').map((e) => (e.payload as { event: string }).event);
      expect(events).toContain('healed');
      expect(events).toContain('resync');
      // Nothing of the killed worker's streams was left unheld: the survivor resumed them from their checkpoints.
      expect(survivor.output()).toMatch(/"resumeFrom":\{"[A-Z]+\/USDT":\d+/);
    } finally {
      redis.disconnect();
    }
    // Seven CLI processes, two workers and waits of up to 30 s each: far more than jest's default on a loaded machine.
  }, 300_000);
});

/** Whether every pair has a trade received after `sinceMs` in the sink. */
async function storedTradesSince(fleet: FleetHarness, sinceMs: number): Promise<boolean> {
  return fleet.withSink(async (sink) => {
    for (const symbol of PAIRS) {
      if ((await sink.reader!.countEnvelopes({ venue: 'binance', channel: 'trades', symbol, fromMs: sinceMs + 1000 })) === 0) return false;
    }
    return true;
  });
}
