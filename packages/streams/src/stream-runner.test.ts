import type { BeforeRequestInfo, Envelope } from '@tickfleet/core';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { openSink, Pipeline, type Sink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { runCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { StreamMetrics } from './stream-metrics.js';
import { StreamRunner } from './stream-runner.js';

/**
 * One StreamRunner in-process with a real redis-server, SQLite store and sink, and the emulation's
 * WebSocket endpoints; Binance REST unreachable, so every trade-id gap the emulation injects is
 * left unhealed: each must be on the gap ledger with its exact range and a stream_events record,
 * and `tickfleet gaps list` must print it as trade ids.
 */
describe('StreamRunner: unhealed gaps on the ledger', () => {
  let redis: TestRedis;
  let mv: MockVenue;
  let dir: TempDir;
  let store: StateStore;
  let sink: Sink;
  let connection: RedisClient;
  beforeAll(async () => {
    redis = await startRedis();
    mv = await startMockVenue({ scenario: { streams: { binance: { gapEvery: 15 } } } as never });
  });
  afterAll(async () => {
    await mv.stop();
    await redis.stop();
  });
  beforeEach(async () => {
    dir = tempDir('stream-runner-');
    store = await openStore(dir.sqliteUrl('state.db'));
    sink = await openSink(dir.sqliteUrl('data.db'));
    connection = createRedisConnection(redis.url);
  });
  afterEach(async () => {
    connection.disconnect();
    await sink.close();
    await store.close();
    dir.remove();
  });

  it('puts each unhealed range on the ledger and in stream_events, and spends REST through the gate', async () => {
    // REST refused at the socket: aggTrades healing fails and every hole stays open.
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'http://127.0.0.1:1', rateLimit: { limit: 1000, periodMs: 10_000 } });
    await store.streams.upsert({ name: 'majors', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT'], channels: ['trades'] });
    const pipeline = new Pipeline({ sink });
    const gated: BeforeRequestInfo[] = [];
    const prefix = redis.namespace();
    const runner = new StreamRunner({
      connection,
      prefix,
      workerId: 'w-test',
      store,
      pipeline,
      gate: { beforeRequest: async (info) => void gated.push(info) },
      logger: createLogger({ role: 'worker', level: 'silent' }),
      metrics: new StreamMetrics(createRegistry('worker')),
      endpoints: { binanceWsUrl: `${mv.url.replace('http://', 'ws://')}/binance`, krakenWsUrl: 'ws://127.0.0.1:1' },
      leaseTtlMs: 1500,
      pollMs: 200,
    });
    await runner.start();
    try {
      await waitFor(async () => (await store.gaps.list({ kind: 'trade-ids' })).length >= 3, 'three unhealed ranges on the ledger', { timeoutMs: 30_000 });
      expect(runner.health()).toEqual([expect.objectContaining({ name: 'majors', worker: 'w-test', state: 'live' })]);
    } finally {
      await runner.stop();
      await pipeline.close();
    }
    expect(runner.health()).toEqual([]);
    const ledger = await store.gaps.list({ kind: 'trade-ids' });
    const events: Envelope[] = [];
    const trades = new Map<string, number[]>();
    for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'binance' })) {
      if (envelope.channel === 'stream_events') events.push(envelope);
      if (envelope.channel === 'trades')
        trades.set(envelope.symbol, [...(trades.get(envelope.symbol) ?? []), Number((envelope.payload as { tradeId: string }).tradeId)]);
    }
    // Ground truth: every hole between stored trades is exactly one ledger entry, and nothing else is.
    const holes: string[] = [];
    for (const [symbol, ids] of trades) {
      ids.sort((a, b) => a - b);
      for (let i = 1; i < ids.length; i++) if (ids[i]! > ids[i - 1]! + 1) holes.push(`binance:${symbol}:-:trades ${ids[i - 1]! + 1}..${ids[i]! - 1}`);
    }
    expect(ledger.map((g) => `${g.jobId} ${g.fromMs}..${g.toMs - 1}`).sort()).toEqual(holes.sort());
    const unhealed = events.filter((e) => (e.payload as { event: string }).event === 'unhealed');
    expect(unhealed.map((e) => `binance:${e.symbol}:-:trades ${String(e.payload.fromId)}..${String(e.payload.toId)}`).sort()).toEqual(holes.sort());
    expect(unhealed[0]!.payload).toMatchObject({ stream: 'majors', workerId: 'w-test', reason: expect.stringMatching(/aggTrades failed/) });
    // Each healing attempt asked the budget gate first.
    expect(gated.length).toBeGreaterThanOrEqual(holes.length);
    // Healing asks aggTrades (weight 4) first, then historicalTrades (weight 25) for what is still missing.
    const weights: Record<string, number> = { aggTrades: 4, historicalTrades: 25 };
    expect(gated.every((g) => g.venue === 'binance' && weights[g.endpoint] === g.weight)).toBe(true);
    expect(gated.some((g) => g.endpoint === 'aggTrades')).toBe(true);
    // The ledger prints trade ids, not dates.
    const listed = await runCli(['--store', dir.sqliteUrl('state.db'), 'gaps', 'list', ledger[0]!.jobId]);
    expect(listed.stdout).toContain(`trade id ${ledger[0]!.fromMs}`);
    expect(listed.stdout).toMatch(/trade-ids/);
  });
});
