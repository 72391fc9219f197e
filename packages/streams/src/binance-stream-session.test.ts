import type { Envelope } from '@tickfleet/core';
import { binanceBookAtUpdateId, binanceModel, lastClosedTick, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock, waitFor } from '@tickfleet/testkit';
import { BinanceStreamSession, type BinanceStreamSessionOptions } from './binance-stream-session.js';
import type { StreamEvent, StreamRestRequest } from './stream-session.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30);
const SEED = 42;
const PAIRS = ['BTC/USDT', 'ETH/USDT'];

describe('BinanceStreamSession against the emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let session: BinanceStreamSession | undefined;
  let records: Envelope[];
  let events: StreamEvent[];
  let rest: StreamRestRequest[];

  beforeEach(async () => {
    clock = new ManualClock(T0);
    mv = await startMockVenue({ clock });
    records = [];
    events = [];
    rest = [];
  });
  afterEach(async () => {
    await session?.stop();
    session = undefined;
    await mv.stop();
  });

  /** A session of PAIRS (trades + book) collecting into `records`, `events` and `rest`; `extra` overrides any option. */
  const open = async (extra: Partial<BinanceStreamSessionOptions> = {}): Promise<BinanceStreamSession> => {
    session = new BinanceStreamSession({
      wsBaseUrl: mv.url.replace('http://', 'ws://') + '/binance',
      restBaseUrl: mv.baseUrl('binance'),
      symbols: PAIRS,
      channels: ['trades', 'book'],
      // 100 levels (weight 5) hold the top 20 for the few seconds a test runs
      depthLimit: 100,
      clock,
      backoff: { initialMs: 10, maxMs: 50 },
      onRecords: async (envs) => {
        records.push(...envs);
      },
      onEvent: (e) => events.push(e),
      beforeRestRequest: async (r) => {
        rest.push(r);
      },
      ...extra,
    });
    await session.start();
    await waitFor(() => mv.stats().streams.binance.openConnections === 1 && session?.stats().state !== 'connecting', 'the session connected');
    return session;
  };

  /** A trades-only session of BTC/USDT. */
  const openOne = (): Promise<BinanceStreamSession> => open({ symbols: ['BTC/USDT'], channels: ['trades'] });

  /** Everything the emulation owed its connections so far, and how often it (dis)connected. */
  const emulationMark = (): number[] => {
    const e = mv.stats().streams.binance;
    return [e.messagesSent + e.gapsInjected + e.binaryFrames + e.garbledFrames + e.silencedMessages, e.connections, e.disconnects];
  };

  /** Advances the clock in steps; after each, waits until the emulation published the step's ticks (or the connection changed). */
  const run = async (ms: number, stepMs = 500): Promise<void> => {
    for (let done = 0; done < ms; done += stepMs) {
      const before = emulationMark();
      clock.advance(stepMs);
      await waitFor(() => emulationMark().some((v, i) => v > (before[i] ?? 0)), `the ticks to ${clock.now()} published`);
    }
  };

  /** Faults off, then steps until every trade of both pairs up to the last closed tick is recorded (a hole at the end heals with the next trade). */
  const settle = async (s: BinanceStreamSession): Promise<void> => {
    mv.patchScenario({ streams: { binance: { gapEvery: 1_000_000_000, disconnectEvery: 1_000_000_000, garbledRate: 0 } } });
    const complete = (): boolean => PAIRS.every((p) => (s.stats().lastTradeIds[p] ?? -1) >= binanceModel(p, SEED).lastTradeId(lastClosedTick(clock.now())));
    for (let i = 0; i < 20 && !complete(); i++) {
      await run(300, 300);
      await waitFor(complete, 'every trade recorded', { timeoutMs: 1000 }).catch(() => undefined);
    }
    expect(complete()).toBe(true);
  };

  /** Every pair's trades are contiguous from the first recorded id to the last tick's, each equal to the tape. */
  const expectCompleteTape = (): number => {
    let total = 0;
    for (const pair of PAIRS) {
      const model = binanceModel(pair, SEED);
      const trades = records
        .filter((e) => e.channel === 'trades' && e.symbol === pair)
        .map((e) => e.payload as { tradeId: string; price: string; size: string; timeMs: number; side: string });
      const ids = [...new Set(trades.map((t) => Number(t.tradeId)))].sort((a, b) => a - b);
      const first = ids[0] ?? 0;
      const last = model.lastTradeId(lastClosedTick(clock.now()));
      expect(ids).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
      const tape = model.tradesBetween(first, last);
      const byId = new Map(trades.map((t) => [Number(t.tradeId), t]));
      for (const t of tape) {
        const got = byId.get(t.id);
        expect([Number(got?.price), Number(got?.size), got?.timeMs, got?.side]).toEqual([
          Number(model.formatPrice(t.priceTicks)),
          Number(model.formatQty(t.qtyUnits)),
          t.timeMs,
          t.buyerMaker ? 'sell' : 'buy',
        ]);
      }
      total += tape.length;
    }
    return total;
  };

  /** The last book record of each pair equals the emulation's book at that update id (top 20, as Binance prints it). */
  const expectBooksMatch = (): void => {
    for (const pair of PAIRS) {
      const books = records.filter((e) => e.channel === 'book' && e.symbol === pair);
      const last = books[books.length - 1];
      expect(last).toBeDefined();
      const truth = binanceBookAtUpdateId(pair, last!.sequence!, SEED, 20);
      expect({ bids: last!.payload.bids, asks: last!.payload.asks }).toEqual(truth);
      expect(last!.messageId).toBe(`binance:${pair.replace('/', '')}:book:${last!.sequence}`);
    }
  };

  test('trades contiguous and equal to the tape; books rebuilt by the documented procedure equal the emulation at their update id', async () => {
    const s = await open();
    await run(3000);
    await settle(s);
    const count = expectCompleteTape();
    expect(count).toBeGreaterThan(30);
    expectBooksMatch();
    const st = s.stats();
    expect(st).toMatchObject({ state: 'live', reconnects: 0, gapsFound: 0, resyncs: 0, garbledFrames: 0, pipelineErrors: 0, connectAttempts: 1 });
    expect(st.recentConnectAttemptsMs).toHaveLength(1);
    // one combined connection, four streams, nothing sent to the venue
    expect(mv.stats().streams.binance).toMatchObject({ connections: 1, subscriptions: 4, rateLimitCloses: 0 });
    await waitFor(() => s.stats().messages === mv.stats().streams.binance.messagesSent, 'every message sent processed');
    expect(rest.every((r) => r.venue === 'binance' && r.endpoint === 'depth' && r.weight === 5)).toBe(true);
    expect(rest).toHaveLength(2);
    // a trade's message id is scoped by venue and symbol, so REST-healed and streamed copies dedup together
    expect(records.find((e) => e.channel === 'trades')?.messageId).toMatch(/^binance:(BTCUSDT|ETHUSDT):trade:\d+$/);
    expect(st.timeQuality.skewP50Ms).not.toBeNull();
    expect(st.timeQuality.outOfOrder).toBe(0);
  });

  /** Whether trade `id` is a fill of an aggregate of several trades (aggTrades cannot give it on its own). */
  const inMultiAggregate = (pair: string, id: number): boolean => {
    const model = binanceModel(pair, SEED);
    const agg = model.aggsInTick(model.tickOfTrade(id)).find((a) => a.firstTradeId <= id && id <= a.lastTradeId);
    return agg!.lastTradeId > agg!.firstTradeId;
  };

  test('gapEvery: every trade-id gap is healed (aggTrades by time, historicalTrades for multi-trade aggregates) and every book break resynced', async () => {
    mv.patchScenario({ streams: { binance: { gapEvery: 9 } } });
    const s = await open();
    await run(3000);
    await settle(s);
    expectCompleteTape();
    expectBooksMatch();
    const st = s.stats();
    const gaps = events.filter((e) => e.type === 'gap');
    expect(st.gapsFound).toBe(gaps.length);
    expect(st.gapsFound).toBeGreaterThan(2);
    expect(st.gapsHealed).toBe(st.gapsFound);
    expect(st.gapsUnhealed).toBe(0);
    expect(st.resyncs).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === 'resync')).toHaveLength(st.resyncs);
    // ground truth: every message the emulation dropped was a trade (healed) or a diff (resynced)
    expect(st.gapsFound + st.resyncs).toBeLessThanOrEqual(mv.stats().streams.binance.gapsInjected);
    // one aggTrades call locates each hole by time; historicalTrades only where a missing id is a fill of a multi-trade aggregate
    const tradeGaps = gaps as Array<Extract<StreamEvent, { type: 'gap' }>>;
    const needsHistory = tradeGaps.filter((g) =>
      Array.from({ length: g.toId - g.fromId + 1 }, (_, i) => g.fromId + i).some((id) => inMultiAggregate(g.symbol, id)),
    );
    expect(needsHistory.length).toBeGreaterThan(0);
    expect(needsHistory.length).toBeLessThan(tradeGaps.length);
    const agg = rest.filter((r) => r.endpoint === 'aggTrades');
    const hist = rest.filter((r) => r.endpoint === 'historicalTrades');
    expect([agg.length, hist.length]).toEqual([tradeGaps.length, needsHistory.length]);
    expect(agg.every((r) => r.weight === 4) && hist.every((r) => r.weight === 25)).toBe(true);
    const healed = events.filter((e): e is Extract<StreamEvent, { type: 'healed' }> => e.type === 'healed');
    expect(healed.map((h) => h.restCalls)).toEqual(tradeGaps.map((g) => (needsHistory.includes(g) ? 2 : 1)));
    // ground truth: the venue accounted exactly the weight the session declared
    expect(mv.stats().venues.binance.weightUsed).toBe(rest.reduce((sum, r) => sum + r.weight, 0));
  });

  test('a hole of more than a page: found by time, paged by aggregate id, fills of multi-trade aggregates from historicalTrades; the tape complete', async () => {
    const s = await openOne();
    await run(1000);
    // the last trade before the hole is the last one published, once the session has read everything sent
    await waitFor(() => s.stats().messages === mv.stats().streams.binance.messagesSent, 'every message sent processed');
    const before = s.stats().lastTradeIds['BTC/USDT']!;
    // 200 s of trades (about 1600, in 1300 aggregates): more than one page of each endpoint. The emulation withholds
    // every message of the window (it judges silence at the clock's instant, so one step inside it).
    const HOLE_MS = 200_000;
    mv.patchScenario({ streams: { binance: { silenceForMs: HOLE_MS } } });
    clock.advance(HOLE_MS - 100);
    await run(1000);
    await waitFor(() => events.some((e) => e.type === 'healed' || e.type === 'unhealed'), 'the hole healed or reported', { timeoutMs: 60_000 });
    await run(500);
    const model = binanceModel('BTC/USDT', SEED);
    // The emulation has published every tick up to the clock; the session may still be reading the last of them.
    const last = model.lastTradeId(lastClosedTick(clock.now()));
    await waitFor(() => records.some((e) => Number(e.payload.tradeId) >= last), `trade ${last} (the last closed tick's) recorded`);
    const gap = events.find((e): e is Extract<StreamEvent, { type: 'gap' }> => e.type === 'gap')!;
    expect(gap.fromId).toBe(before + 1);
    expect(events.filter((e) => e.type === 'unhealed')).toEqual([]);
    expect(s.stats()).toMatchObject({ gapsFound: 1, gapsHealed: 1, gapsUnhealed: 0 });
    // stored: every id once, contiguous, each equal to the tape (compared in plain code: a few thousand expect calls would cost seconds)
    const ids = records.map((e) => Number(e.payload.tradeId));
    expect(ids.length).toBe(last - ids[0]! + 1);
    expect(ids.filter((id, i) => id !== ids[0]! + i)).toEqual([]);
    const tape = new Map(model.tradesBetween(ids[0]!, last).map((t) => [t.id, t]));
    const wrong = records.filter((e) => {
      const t = tape.get(Number(e.payload.tradeId))!;
      const p = e.payload as { price: string; size: string; timeMs: number; side: string };
      return (
        p.price !== model.formatPrice(t.priceTicks, 8) ||
        p.size !== model.formatQty(t.qtyUnits, 8) ||
        p.timeMs !== t.timeMs ||
        p.side !== (t.buyerMaker ? 'sell' : 'buy')
      );
    });
    expect(wrong).toEqual([]);
    // the cost: aggTrades pages of 1000 aggregates (weight 4), historicalTrades pages (weight 25) only over the fills aggTrades sums away
    const holeTrades = gap.toId - gap.fromId + 1;
    const aggregates = model.lastAggId(model.tickOfTrade(gap.toId)) - model.lastAggId(model.tickOfTrade(gap.fromId) - 1);
    expect(aggregates).toBeGreaterThan(1000);
    const agg = rest.filter((r) => r.endpoint === 'aggTrades');
    const hist = rest.filter((r) => r.endpoint === 'historicalTrades');
    expect(agg.length).toBeGreaterThanOrEqual(Math.ceil(aggregates / 1000));
    expect(agg.length).toBeLessThanOrEqual(Math.ceil(aggregates / 1000) + 1);
    expect(hist.length).toBeGreaterThan(0);
    expect(hist.length).toBeLessThanOrEqual(Math.ceil(holeTrades / 1000));
    expect(events.find((e) => e.type === 'healed')).toMatchObject({ restCalls: agg.length + hist.length });
    expect(mv.stats().venues.binance.weightUsed).toBe(4 * agg.length + 25 * hist.length);
  });

  test('disconnectEvery and garbled frames: reconnects with backoff, frames counted, no trade lost', async () => {
    mv.patchScenario({ streams: { binance: { disconnectEvery: 30, garbledRate: 0.03 } } });
    const s = await open();
    await run(3000);
    await settle(s);
    expectCompleteTape();
    expectBooksMatch();
    const st = s.stats();
    const emu = mv.stats().streams.binance;
    expect(emu.disconnects).toBeGreaterThanOrEqual(2);
    expect(st.reconnects).toBe(emu.disconnects);
    expect(st.connectAttempts).toBe(emu.connections);
    expect(st.garbledFrames).toBe(emu.binaryFrames + emu.garbledFrames);
    expect(st.garbledFrames).toBeGreaterThan(0);
    expect(events.some((e) => e.type === 'garbled')).toBe(true);
    expect(events.filter((e) => e.type === 'disconnected')).toHaveLength(emu.disconnects);
    expect(st.gapsUnhealed).toBe(0);
  });

  test('silence: a connection quiet past silenceTimeoutMs is reopened, and the trades of the silence are healed', async () => {
    const s = await open({ silenceTimeoutMs: 1000 });
    await run(1000);
    // Every message published so far read before the clock jumps: one read after the jump would stamp
    // the connection as heard from at the new instant, and (the clock standing still) it would never fall silent.
    await waitFor(() => s.stats().messages === mv.stats().streams.binance.messagesSent, 'every message sent processed');
    mv.patchScenario({ streams: { binance: { silenceForMs: 1500 } } });
    clock.advance(1200);
    await waitFor(() => events.some((e) => e.type === 'silent'), 'the silent event');
    await waitFor(() => mv.stats().streams.binance.connections === 2, 'reconnected');
    await run(2000);
    await settle(s);
    expectCompleteTape();
    expectBooksMatch();
    expect(s.stats().gapsHealed).toBeGreaterThan(0);
    expect(s.stats().gapsUnhealed).toBe(0);
  });

  test('a pipeline that throws: the records are kept and delivered again, the failure surfaced as an event', async () => {
    let failures = 3;
    const s = await open({
      symbols: ['BTC/USDT'],
      channels: ['trades'],
      onRecords: async (envs) => {
        // slow as well as failing: the session waits, it does not drop
        await new Promise((r) => setTimeout(r, 20));
        if (failures-- > 0) throw new Error('sink unavailable');
        records.push(...envs);
      },
    });
    clock.advance(2000);
    const model = binanceModel('BTC/USDT', SEED);
    const last = model.lastTradeId(lastClosedTick(clock.now()));
    await waitFor(() => records.some((e) => e.payload.tradeId === String(last)), 'the last trade delivered');
    const ids = records.map((e) => Number(e.payload.tradeId));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => (ids[0] ?? 0) + i));
    expect(ids[0]).toBe(model.lastTradeId(lastClosedTick(T0)) + 1);
    expect(events.filter((e) => e.type === 'pipeline-error')).toHaveLength(3);
    expect(s.stats().pipelineErrors).toBe(3);
  });

  test('stopped while the pipeline still refuses: the undelivered trades are reported unhealed with their ranges', async () => {
    const refused: number[] = [];
    const s = await open({
      symbols: ['BTC/USDT'],
      channels: ['trades'],
      onRecords: async (envs) => {
        for (const e of envs) refused.push(Number(e.payload.tradeId));
        throw new Error('sink unavailable');
      },
    });
    clock.advance(1000);
    await waitFor(() => s.stats().pipelineErrors >= 2, 'the pipeline refusing');
    await s.stop();
    const unhealed = events.filter((e): e is Extract<StreamEvent, { type: 'unhealed' }> => e.type === 'unhealed');
    const reported = unhealed.flatMap((u) => Array.from({ length: u.toId - u.fromId + 1 }, (_, i) => u.fromId + i));
    expect(reported.length).toBeGreaterThan(0);
    expect(reported).toEqual([...new Set(refused)].sort((a, b) => a - b));
    expect(unhealed.every((u) => u.reason.includes('sink unavailable'))).toBe(true);
    expect(s.stats().state).toBe('stopped');
  });

  test('REST unreachable: every trade-id hole is reported unhealed with its exact range, nothing missing silently', async () => {
    mv.patchScenario({ streams: { binance: { gapEvery: 6 } } });
    session = new BinanceStreamSession({
      wsBaseUrl: mv.url.replace('http://', 'ws://') + '/binance',
      restBaseUrl: 'http://127.0.0.1:1',
      symbols: ['BTC/USDT'],
      channels: ['trades'],
      clock,
      backoff: { initialMs: 5, maxMs: 10 },
      onRecords: async (envs) => {
        records.push(...envs);
      },
      onEvent: (e) => events.push(e),
    });
    await session.start();
    await waitFor(() => mv.stats().streams.binance.openConnections === 1, 'connected');
    await run(2000);
    const s = session;
    await waitFor(() => s.stats().messages === mv.stats().streams.binance.messagesSent, 'every trade sent processed');
    const got = records.map((e) => Number(e.payload.tradeId));
    const first = got[0]!;
    const last = got[got.length - 1]!;
    const unhealed = events.filter((e): e is Extract<StreamEvent, { type: 'unhealed' }> => e.type === 'unhealed');
    const reported = new Set(unhealed.flatMap((u) => Array.from({ length: u.toId - u.fromId + 1 }, (_, i) => u.fromId + i)));
    const stored = new Set(got);
    const holes = Array.from({ length: last - first + 1 }, (_, i) => first + i).filter((id) => !stored.has(id));
    expect(holes.length).toBeGreaterThan(0);
    expect([...reported].sort((a, b) => a - b)).toEqual(holes);
    expect(unhealed.every((u) => u.reason.startsWith('aggTrades failed'))).toBe(true);
    expect(s.stats()).toMatchObject({ gapsHealed: 0, gapsUnhealed: unhealed.length, gapsFound: unhealed.length });
  });

  test('resumeTradeIds: a session taking over a stream heals the hole since the last stored trade', async () => {
    const model = binanceModel('BTC/USDT', SEED);
    const stored = model.lastTradeId(lastClosedTick(T0)) - 40;
    session = new BinanceStreamSession({
      wsBaseUrl: mv.url.replace('http://', 'ws://') + '/binance',
      restBaseUrl: mv.baseUrl('binance'),
      symbols: ['BTC/USDT'],
      channels: ['trades'],
      clock,
      resumeTradeIds: { 'BTC/USDT': stored },
      onRecords: async (envs) => {
        records.push(...envs);
      },
      onEvent: (e) => events.push(e),
    });
    await session.start();
    await waitFor(() => mv.stats().streams.binance.openConnections === 1, 'connected');
    clock.advance(1000);
    const last = model.lastTradeId(lastClosedTick(clock.now()));
    await waitFor(() => records.some((e) => e.payload.tradeId === String(last)), 'the last trade recorded');
    const ids = records.map((e) => Number(e.payload.tradeId));
    expect(ids).toEqual(Array.from({ length: last - stored }, (_, i) => stored + 1 + i));
    expect(events.find((e) => e.type === 'healed')).toMatchObject({ symbol: 'BTC/USDT', fromId: stored + 1, restCalls: 1 });
  });

  test('options naming no streams or too many are refused with the bad input named', () => {
    const base = { wsBaseUrl: 'ws://x/binance', restBaseUrl: 'http://x', onRecords: async () => {} };
    expect(() => new BinanceStreamSession({ ...base, symbols: [], channels: ['trades'] })).toThrow('invalid symbols');
    const many = Array.from({ length: 513 }, (_, i) => `C${i}/USDT`);
    expect(() => new BinanceStreamSession({ ...base, symbols: many, channels: ['trades', 'book'] })).toThrow('at most 1024 streams');
    expect(() => new BinanceStreamSession({ ...base, symbols: ['BTC/USDT'], channels: ['candles' as never] })).toThrow('invalid channels');
  });
});
