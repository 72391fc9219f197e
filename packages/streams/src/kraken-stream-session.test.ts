import type { Envelope } from '@tickfleet/core';
import { krakenChecksum, krakenModel, lastClosedTick, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock, waitFor } from '@tickfleet/testkit';
import { krakenBookChecksum } from './internal/kraken-checksum.js';
import { keepDecimalText, KrakenStreamSession } from './kraken-stream-session.js';
import type { StreamEvent } from './stream-session.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30);
const SEED = 42;
const PAIRS = ['BTC/USD', 'ETH/USD'];

/** The emulation's top `depth` levels of `pair` after tick `tick`, printed as Kraken prints them. */
function truthAt(pair: string, tick: number, depth: number): { bids: Array<[string, string]>; asks: Array<[string, string]> } {
  const model = krakenModel(pair, SEED);
  const { bids, asks } = model.levels(tick, depth);
  const print = (levels: Array<[number, number]>): Array<[string, string]> => levels.map(([p, q]) => [model.formatPrice(p), model.formatQty(q)]);
  return { bids: print(bids), asks: print(asks) };
}

describe('KrakenStreamSession against the emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let session: KrakenStreamSession | undefined;
  let records: Envelope[];
  let events: StreamEvent[];
  let rest: Array<{ venue: string; endpoint: string; weight: number }>;

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

  const open = async (): Promise<KrakenStreamSession> => {
    session = new KrakenStreamSession({
      url: mv.url.replace('http://', 'ws://') + '/kraken/v2',
      restBaseUrl: mv.baseUrl('kraken'),
      beforeRestRequest: async (r) => void rest.push(r),
      symbols: PAIRS,
      channels: ['trades', 'book'],
      clock,
      backoff: { initialMs: 10, maxMs: 50 },
      onRecords: async (envs) => {
        records.push(...envs);
      },
      onEvent: (e) => events.push(e),
    });
    await session.start();
    await waitFor(() => session?.stats().state === 'live', 'both books in sync');
    return session;
  };

  /** Steps the clock; after each step waits until every trade of both pairs up to the last closed tick is recorded. */
  const run = async (s: KrakenStreamSession, ms: number): Promise<void> => {
    for (let done = 0; done < ms; done += 500) {
      clock.advance(500);
      const tick = lastClosedTick(clock.now());
      await waitFor(() => PAIRS.every((p) => (s.stats().lastTradeIds[p] ?? -1) >= krakenModel(p, SEED).lastTradeId(tick)), `trades to tick ${tick}`);
    }
  };

  const expectBooksMatch = (): void => {
    for (const pair of PAIRS) {
      const books = records.filter((e) => e.channel === 'book' && e.symbol === pair);
      const last = books[books.length - 1]!;
      const tick = Math.round(last.serverTimeMs! / 100) - 1;
      expect({ bids: last.payload.bids, asks: last.payload.asks }).toEqual(truthAt(pair, tick, 10));
      expect(last.payload.checksum).toBe(krakenBookChecksum(last.payload.asks as Array<[string, string]>, last.payload.bids as Array<[string, string]>));
    }
  };

  test('the checksum algorithm reproduces the emulation (docs example included there) and decimals keep their text', () => {
    const { bids, asks } = truthAt('BTC/USD', lastClosedTick(T0), 10);
    expect(krakenBookChecksum(asks, bids)).toBe(krakenChecksum(asks, bids));
    expect(JSON.parse(keepDecimalText('{"price":45283.50,"qty":0.10000000,"trade_id":7}'))).toEqual({ price: '45283.50', qty: '0.10000000', trade_id: 7 });
  });

  test('every book update verified; trades contiguous and equal to the tape; checksum corruption forces resubscribe and the book is right again', async () => {
    const s = await open();
    await run(s, 1500);
    // every book update and trade message sent was processed, each book update checked against its checksum
    await waitFor(() => s.stats().messages === mv.stats().streams.kraken.messagesSent, 'every message processed');
    expect(s.stats()).toMatchObject({ checksumMismatches: 0, resyncs: 0, gapsFound: 0 });
    expectBooksMatch();

    mv.patchScenario({ streams: { kraken: { checksumCorruptionRate: 0.15 } } });
    await run(s, 2500);
    mv.patchScenario({ streams: { kraken: { checksumCorruptionRate: 0 } } });
    await run(s, 1000);
    await waitFor(() => s.stats().state === 'live', 'books in sync again');
    const st = s.stats();
    const emu = mv.stats().streams.kraken;
    expect(st.checksumMismatches).toBeGreaterThan(0);
    // updates between a mismatch and the fresh snapshot are skipped unverified, so some corruptions go unseen
    expect(st.checksumMismatches).toBeLessThanOrEqual(emu.checksumCorruptions);
    expect(st.resyncs).toBe(st.checksumMismatches);
    expect(events.filter((e) => e.type === 'checksum-mismatch')).toHaveLength(st.checksumMismatches);
    // one subscribe per channel, then one book resubscription per mismatch
    expect(emu.subscriptions).toBe(2 * PAIRS.length + st.checksumMismatches);
    clock.advance(1000);
    await waitFor(() => PAIRS.every((p) => records.some((e) => e.channel === 'book' && e.symbol === p && e.serverTimeMs! > clock.now() - 1000)), 'fresh books');
    expectBooksMatch();

    for (const pair of PAIRS) {
      const model = krakenModel(pair, SEED);
      const ids = records.filter((e) => e.channel === 'trades' && e.symbol === pair).map((e) => Number(e.payload.tradeId));
      const first = ids[0]!;
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => first + i));
      const last = ids[ids.length - 1]!;
      const tape = model.tradesBetween(first, last);
      const got = records.filter((e) => e.channel === 'trades' && e.symbol === pair).map((e) => [e.payload.price, e.payload.size, e.payload.timeMs]);
      expect(got).toEqual(tape.map((t) => [model.formatPrice(t.priceTicks), model.formatQty(t.qtyUnits), t.timeMs]));
    }
    expect(st.gapsFound).toBe(0);
  });

  test('disconnects: the session resubscribes, the trade snapshot closes the hole and every book resyncs to the emulation', async () => {
    const s = await open();
    mv.patchScenario({ streams: { kraken: { disconnectEvery: 25 } } });
    await run(s, 2500);
    mv.patchScenario({ streams: { kraken: { disconnectEvery: 1_000_000_000 } } });
    await run(s, 500);
    await waitFor(() => s.stats().state === 'live', 'books in sync again');
    const emu = mv.stats().streams.kraken;
    expect(emu.disconnects).toBeGreaterThanOrEqual(2);
    expect(s.stats()).toMatchObject({ reconnects: emu.disconnects, gapsFound: 0 });
    const resyncs = events.filter((e): e is Extract<StreamEvent, { type: 'resync' }> => e.type === 'resync');
    expect(resyncs.length).toBe(s.stats().resyncs);
    expect(resyncs.every((e) => e.reason === 'reconnected')).toBe(true);
    for (const pair of PAIRS) {
      const ids = [...new Set(records.filter((e) => e.channel === 'trades' && e.symbol === pair).map((e) => Number(e.payload.tradeId)))].sort((a, b) => a - b);
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => ids[0]! + i));
    }
    clock.advance(1000);
    await waitFor(() => PAIRS.every((p) => records.some((e) => e.channel === 'book' && e.symbol === p && e.serverTimeMs! > clock.now() - 1000)), 'fresh books');
    expectBooksMatch();
  });

  test('gapEvery: every trade-id gap is healed from REST Trades by time, each call weighing 1; the tape complete and equal to the model', async () => {
    const s = await open();
    mv.patchScenario({ streams: { kraken: { gapEvery: 5 } } });
    // trade messages hold a tick's trades: the last one of a step can be the lost one, seen with the next trade
    for (let i = 0; i < 6; i++) {
      clock.advance(500);
      await waitFor(() => s.stats().lastMessageAgeMs === 0, 'the step received');
    }
    mv.patchScenario({ streams: { kraken: { gapEvery: 1_000_000_000 } } });
    await run(s, 1000);
    const st = s.stats();
    const gaps = events.filter((e): e is Extract<StreamEvent, { type: 'gap' }> => e.type === 'gap');
    expect(st.gapsFound).toBe(gaps.length);
    expect(st.gapsFound).toBeGreaterThan(2);
    expect(st.gapsHealed).toBe(st.gapsFound);
    expect(st.gapsUnhealed).toBe(0);
    expect(events.filter((e) => e.type === 'unhealed')).toEqual([]);
    // one Trades call finds each hole (its trades are seconds old, well within a page)
    const healed = events.filter((e): e is Extract<StreamEvent, { type: 'healed' }> => e.type === 'healed');
    expect(healed.map((h) => [h.fromId, h.toId, h.restCalls])).toEqual(gaps.map((g) => [g.fromId, g.toId, 1]));
    expect(rest).toHaveLength(gaps.length);
    expect(rest.every((r) => r.venue === 'kraken' && r.endpoint === 'Trades' && r.weight === 1)).toBe(true);
    // ground truth: the venue counted exactly the calls the session declared
    expect(mv.stats().venues.kraken.weightUsed).toBe(rest.length);
    for (const pair of PAIRS) {
      const model = krakenModel(pair, SEED);
      const trades = records.filter((e) => e.channel === 'trades' && e.symbol === pair);
      const ids = trades.map((e) => Number(e.payload.tradeId));
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => ids[0]! + i));
      const tape = model.tradesBetween(ids[0]!, ids.at(-1)!);
      expect(trades.map((e) => [e.messageId, e.payload.price, e.payload.size, e.payload.timeMs, e.payload.side])).toEqual(
        tape.map((t) => [
          `kraken:${pair}:trade:${t.id}`,
          model.formatPrice(t.priceTicks),
          model.formatQty(t.qtyUnits),
          t.timeMs,
          t.buyerMaker ? 'sell' : 'buy',
        ]),
      );
    }
  });

  test('REST refused after retries: the hole is reported unhealed with its range and the reason', async () => {
    const s = await open();
    mv.patchScenario({ venues: { kraken: { errorRate: 1, errorStatuses: [503] } }, streams: { kraken: { gapEvery: 5 } } });
    for (let i = 0; i < 10 && s.stats().gapsFound < 1; i++) {
      clock.advance(500);
      await waitFor(() => s.stats().lastMessageAgeMs === 0, 'the step received');
    }
    await waitFor(() => s.stats().gapsUnhealed >= 1, 'a hole reported unhealed');
    const unhealed = events.filter((e): e is Extract<StreamEvent, { type: 'unhealed' }> => e.type === 'unhealed');
    expect(unhealed[0]!.reason).toMatch(/^Trades failed: kraken Trades answered HTTP 503/);
    for (const u of unhealed) {
      const ids = new Set(records.filter((e) => e.channel === 'trades' && e.symbol === u.symbol).map((e) => Number(e.payload.tradeId)));
      for (let id = u.fromId; id <= u.toId; id++) expect(ids.has(id)).toBe(false);
    }
    mv.patchScenario({ venues: { kraken: { errorRate: 0 } }, streams: { kraken: { gapEvery: 1_000_000_000 } } });
  });
});
