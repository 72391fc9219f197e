import { ManualClock, waitFor } from '@tickfleet/testkit';
import { RecordingSocket } from '../../test/ws-test-client.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { binanceBookAtUpdateId, binanceModel } from './binance-ws-market.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30);
const SEED = 42;

interface Depth {
  e: string;
  E: number;
  s: string;
  U: number;
  u: number;
  b: Array<[string, string]>;
  a: Array<[string, string]>;
}
interface Trade {
  e: string;
  t: number;
  p: string;
  q: string;
  T: number;
  m: boolean;
}
const isTrade = (m: unknown): m is Trade => (m as Trade).e === 'trade';

/**
 * Binance's documented local order book: buffer diffs, take the REST snapshot, drop diffs with
 * `u <= lastUpdateId`, the first applied one must have `U <= lastUpdateId + 1 <= u`, then every diff
 * `U = previous u + 1`; any break discards the book and starts over.
 */
class LocalBook {
  bids = new Map<string, string>();
  asks = new Map<string, string>();
  lastU = -1;
  synced = false;
  resyncs = 0;
  private buffer: Depth[] = [];

  onEvent(ev: Depth): void {
    if (!this.synced) {
      this.buffer.push(ev);
      return;
    }
    if (ev.U !== this.lastU + 1) {
      this.synced = false;
      this.resyncs += 1;
      this.buffer = [ev];
      return;
    }
    this.apply(ev);
  }

  async sync(restBase: string): Promise<void> {
    const snap = (await (await fetch(`${restBase}/api/v3/depth?symbol=BTCUSDT&limit=5000`)).json()) as {
      lastUpdateId: number;
      bids: Array<[string, string]>;
      asks: Array<[string, string]>;
    };
    this.bids = new Map(snap.bids);
    this.asks = new Map(snap.asks);
    this.lastU = snap.lastUpdateId;
    const pending = this.buffer.filter((e) => e.u > snap.lastUpdateId);
    this.buffer = [];
    const first = pending[0];
    if (first && !(first.U <= snap.lastUpdateId + 1 && snap.lastUpdateId + 1 <= first.u))
      throw new Error(`first diff ${first.U}..${first.u} does not fit ${snap.lastUpdateId}`);
    this.synced = true;
    for (const ev of pending) this.onEvent(ev);
  }

  private apply(ev: Depth): void {
    for (const [p, q] of ev.b)
      if (Number(q) === 0) this.bids.delete(p);
      else this.bids.set(p, q);
    for (const [p, q] of ev.a)
      if (Number(q) === 0) this.asks.delete(p);
      else this.asks.set(p, q);
    this.lastU = ev.u;
  }
}

describe('binance WebSocket emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let wsBase: string;
  let rest: string;
  const open: RecordingSocket[] = [];
  const connect = async (path: string): Promise<RecordingSocket> => {
    const s = await RecordingSocket.open(`${wsBase}${path}`);
    open.push(s);
    return s;
  };

  beforeEach(async () => {
    clock = new ManualClock(T0);
    mv = await startMockVenue({ clock });
    wsBase = mv.url.replace('http://', 'ws://');
    rest = mv.baseUrl('binance');
  });
  afterEach(async () => {
    for (const s of open.splice(0)) s.ws.terminate();
    await mv.stop();
  });

  test('combined streams: documented trade and diff-depth payloads, contiguous trade ids that REST aggTrades and historicalTrades repeat', async () => {
    const s = await connect('/binance/stream?streams=btcusdt@trade/btcusdt@depth@100ms/btcusdt@depth');
    clock.advance(2000);
    await waitFor(() => s.messages.filter((m) => (m as { stream: string }).stream === 'btcusdt@depth').length >= 2, 'two 1000 ms depth events');
    const wrapped = s.messages as Array<{ stream: string; data: unknown }>;
    for (const w of wrapped) expect(Object.keys(w).sort()).toEqual(['data', 'stream']);
    const fast = wrapped.filter((w) => w.stream === 'btcusdt@depth@100ms').map((w) => w.data as Depth);
    const slow = wrapped.filter((w) => w.stream === 'btcusdt@depth').map((w) => w.data as Depth);
    const trades = wrapped.filter((w) => w.stream === 'btcusdt@trade').map((w) => w.data as Trade);
    expect(fast).toHaveLength(20);
    expect(Object.keys(fast[0]!).sort()).toEqual(['E', 'U', 'a', 'b', 'e', 's', 'u']);
    expect(fast[0]).toMatchObject({ e: 'depthUpdate', s: 'BTCUSDT' });
    for (let i = 1; i < fast.length; i++) expect(fast[i]!.U).toBe(fast[i - 1]!.u + 1);
    // a 1000 ms diff spans exactly the ten 100 ms diffs of its second
    expect(slow[0]!.U).toBe(fast[0]!.U);
    expect(slow[0]!.u).toBe(fast[9]!.u);
    expect(slow[1]!.U).toBe(fast[10]!.U);
    expect(trades.length).toBeGreaterThan(5);
    expect(Object.keys(trades[0]!).sort()).toEqual(['E', 'M', 'T', 'e', 'm', 'p', 'q', 's', 't']);
    for (let i = 1; i < trades.length; i++) expect(trades[i]!.t).toBe(trades[i - 1]!.t + 1);
    // the aggregates of the same instants cover exactly these trade ids (aggregates in detail: the aggTrades test below)
    const agg = (await (await fetch(`${rest}/api/v3/aggTrades?symbol=BTCUSDT&startTime=${T0}&endTime=${clock.now()}`)).json()) as Array<{
      f: number;
      l: number;
    }>;
    expect(agg.flatMap((a) => Array.from({ length: a.l - a.f + 1 }, (_, i) => a.f + i))).toEqual(trades.map((t) => t.t));
    const hist = (await (await fetch(`${rest}/api/v3/historicalTrades?symbol=BTCUSDT&fromId=${trades[0]!.t}&limit=2`)).json()) as Array<
      Record<string, unknown>
    >;
    expect(hist.map((h) => [h.id, h.price, h.qty, h.time, h.isBuyerMaker])).toEqual(trades.slice(0, 2).map((t) => [t.t, t.p, t.q, t.T, t.m]));
    expect(mv.stats().streams.binance).toMatchObject({ connections: 1, openConnections: 1, subscriptions: 3, messagesSent: s.messages.length });
  });

  test('live SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS / properties, and the documented error replies', async () => {
    const s = await connect('/binance/ws');
    s.send({ method: 'SUBSCRIBE', params: ['ethusdt@trade', 'btcusdt@depth@100ms'], id: 1 });
    expect(await s.next((m) => (m as { id: number }).id === 1, 'SUBSCRIBE reply')).toEqual({ result: null, id: 1 });
    s.send({ method: 'UNSUBSCRIBE', params: ['btcusdt@depth@100ms'], id: 2 });
    expect(await s.next((m) => (m as { id: number }).id === 2, 'UNSUBSCRIBE reply')).toEqual({ result: null, id: 2 });
    s.send({ method: 'LIST_SUBSCRIPTIONS', id: 'list' });
    expect(await s.next((m) => (m as { id: string }).id === 'list', 'LIST reply')).toEqual({ result: ['ethusdt@trade'], id: 'list' });
    s.send({ method: 'GET_PROPERTY', params: ['combined'], id: 3 });
    expect(await s.next((m) => (m as { id: number }).id === 3, 'GET_PROPERTY reply')).toEqual({ result: false, id: 3 });
    // a second connection for the error cases: one may send at most 5 messages a second
    const e = await connect('/binance/ws');
    e.send({ method: 'SET_PROPERTY', params: ['combined', 'yes'], id: 4 });
    expect(await e.next((m) => (m as { id: number }).id === 4, 'SET_PROPERTY error')).toEqual({ code: 1, msg: 'Invalid value type: expected Boolean', id: 4 });
    e.send({ method: 'SUBSCRIBE_ALL', params: [], id: 5 });
    expect(await e.next((m) => (m as { id: number }).id === 5, 'unknown method error')).toMatchObject({ code: 2, id: 5 });
    e.send('{not json');
    expect(await e.next((m) => (m as { code: number }).code === 3, 'invalid JSON error')).toMatchObject({ code: 3 });
    clock.advance(1000);
    const trade = await s.next<Trade & { s: string }>(isTrade, 'an ETHUSDT trade');
    expect(trade.s).toBe('ETHUSDT');
  });

  test('the local order book procedure rebuilds the emulation book exactly across injected gaps and resyncs', async () => {
    mv.patchScenario({ streams: { binance: { gapEvery: 7 } } });
    const s = await connect('/binance/ws/btcusdt@depth@100ms');
    const book = new LocalBook();
    let seen = 0;
    let breaks = 0;
    let prevU = -1;
    for (let round = 0; round < 12; round++) {
      clock.advance(500);
      const due = (round + 1) * 5;
      await waitFor(() => {
        const st = mv.stats().streams.binance;
        return st.messagesSent + st.gapsInjected === due && s.messages.length === st.messagesSent;
      }, `round ${round}: five diffs published and received`);
      for (; seen < s.messages.length; seen++) {
        const ev = s.messages[seen] as Depth;
        if (prevU >= 0 && ev.U !== prevU + 1) breaks += 1;
        prevU = ev.u;
        book.onEvent(ev);
      }
      if (!book.synced) await book.sync(rest);
    }
    const stats = mv.stats().streams.binance;
    expect(stats.gapsInjected).toBe(Math.floor(60 / 7));
    expect(breaks).toBe(stats.gapsInjected);
    expect(book.resyncs).toBeGreaterThanOrEqual(1);
    const truth = binanceBookAtUpdateId('BTC/USDT', book.lastU, SEED, 5000);
    const sortDesc = (m: Map<string, string>): Array<[string, string]> => [...m].sort((a, b) => Number(b[0]) - Number(a[0]));
    const sortAsc = (m: Map<string, string>): Array<[string, string]> => [...m].sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(sortDesc(book.bids)).toEqual(truth.bids);
    expect(sortAsc(book.asks)).toEqual(truth.asks);
    expect(truth.bids.length).toBeGreaterThan(900);
  });

  test('gapEvery on trades: every missing trade id is counted, and REST historicalTrades by trade id heals it exactly', async () => {
    mv.patchScenario({ streams: { binance: { gapEvery: 4 } } });
    const s = await connect('/binance/ws/btcusdt@trade');
    clock.advance(3000);
    const model = binanceModel('BTC/USDT', SEED);
    const firstId = model.lastTradeId(Math.floor(T0 / 100) - 1) + 1;
    const lastId = model.lastTradeId(Math.floor(clock.now() / 100) - 1);
    await waitFor(() => {
      const st = mv.stats().streams.binance;
      return s.messages.length === st.messagesSent && st.messagesSent + st.gapsInjected === lastId - firstId + 1;
    }, 'every due trade published and received');
    const received = new Set((s.messages as Trade[]).map((t) => t.t));
    const missing: number[] = [];
    for (let id = firstId; id <= lastId; id++) if (!received.has(id)) missing.push(id);
    expect(missing.length).toBe(mv.stats().streams.binance.gapsInjected);
    expect(missing.length).toBeGreaterThan(2);
    for (const id of missing) {
      const [healed] = (await (await fetch(`${rest}/api/v3/historicalTrades?symbol=BTCUSDT&fromId=${id}&limit=1`)).json()) as Array<{
        id: number;
        time: number;
      }>;
      expect(healed!.id).toBe(id);
      expect(model.tradesBetween(id, id)[0]!.timeMs).toBe(healed!.time);
    }
  });

  test('aggTrades: aggregate ids are their own sequence; one taker side at one price and instant is one aggregate, q the sum of its trades', async () => {
    const agg = connect('/binance/ws/btcusdt@aggTrade');
    const trades = connect('/binance/ws/btcusdt@trade');
    const [a, t] = await Promise.all([agg, trades]);
    clock.advance(20_000);
    const model = binanceModel('BTC/USDT', SEED);
    const firstTrade = model.lastTradeId(Math.floor(T0 / 100) - 1) + 1;
    const lastTrade = model.lastTradeId(Math.floor(clock.now() / 100) - 1);
    await waitFor(() => t.messages.length === lastTrade - firstTrade + 1, 'every trade streamed');
    type Agg = { a: number; p: string; q: string; f: number; l: number; T: number; m: boolean };
    const get = async (query: string): Promise<Agg[]> => (await (await fetch(`${rest}/api/v3/aggTrades?symbol=BTCUSDT&${query}`)).json()) as Agg[];
    const byTime = await get(`startTime=${T0}&endTime=${clock.now()}&limit=1000`);
    await waitFor(() => a.messages.length === byTime.length, 'every aggregate streamed');
    // the @aggTrade stream carries exactly the REST rows
    expect((a.messages as Array<Agg & { e: string }>).map(({ a: id, p, q, f, l, T, m }) => ({ a: id, p, q, f, l, T, m }))).toEqual(
      byTime.map(({ a: id, p, q, f, l, T, m }) => ({ a: id, p, q, f, l, T, m })),
    );
    // contiguous aggregate ids, trade ids f..l contiguous across rows and covering the streamed tape, aggregate ids well below trade ids
    expect(byTime.map((r) => r.a)).toEqual(byTime.map((_, i) => byTime[0]!.a + i));
    expect(byTime[0]!.f).toBe(firstTrade);
    expect(byTime[byTime.length - 1]!.l).toBe(lastTrade);
    for (let i = 1; i < byTime.length; i++) expect(byTime[i]!.f).toBe(byTime[i - 1]!.l + 1);
    expect(byTime[0]!.a).toBeLessThan(0.9 * firstTrade);
    const streamed = new Map((t.messages as Trade[]).map((x) => [x.t, x]));
    const multi = byTime.filter((r) => r.l > r.f);
    expect(multi.length).toBeGreaterThan(10);
    expect(multi.length).toBeLessThan(byTime.length / 2);
    for (const r of byTime) {
      const fills = Array.from({ length: r.l - r.f + 1 }, (_, i) => streamed.get(r.f + i)!);
      expect(fills.every((x) => x.p === r.p && x.T === r.T && x.m === r.m)).toBe(true);
      expect(fills.reduce((sum, x) => sum + Math.round(Number(x.q) * 1e5), 0)).toBe(Math.round(Number(r.q) * 1e5));
    }
    // two consecutive aggregates never share side, price and time tick (they would be one)
    for (let i = 1; i < byTime.length; i++) {
      const [x, y] = [byTime[i - 1]!, byTime[i]!];
      expect(x.m === y.m && x.p === y.p && Math.floor(x.T / 100) === Math.floor(y.T / 100)).toBe(false);
    }
    // fromId is an aggregate id; paging by the last a + 1 continues without a hole
    const mid = byTime[100]!;
    const page = await get(`fromId=${mid.a}&limit=5`);
    expect(page).toEqual(byTime.slice(100, 105));
    expect(await get(`fromId=${page[4]!.a + 1}&limit=2`)).toEqual(byTime.slice(105, 107));
    // more than 1 h between startTime and endTime is refused as Binance refuses it
    const wide = await fetch(`${rest}/api/v3/aggTrades?symbol=BTCUSDT&startTime=${T0 - 3_600_001}&endTime=${T0}`);
    expect(wide.status).toBe(400);
    expect(await wide.json()).toEqual({ code: -1127, msg: 'More than 1 hours between startTime and endTime.' });
  });

  test('garbled frames, disconnects and silence: the counters equal what the client saw', async () => {
    mv.patchScenario({ streams: { binance: { garbledRate: 0.3 } } });
    const g = await connect('/binance/ws/btcusdt@depth@100ms');
    clock.advance(3000);
    await waitFor(() => g.frames === 30, 'thirty depth frames');
    const st = mv.stats().streams.binance;
    expect([st.messagesSent, st.binaryFrames, st.garbledFrames]).toEqual([g.messages.length, g.binaryFrames, g.unparsable.length]);
    expect(st.binaryFrames + st.garbledFrames).toBeGreaterThan(0);
    g.ws.terminate();

    mv.reset();
    mv.patchScenario({ streams: { binance: { garbledRate: 0, disconnectEvery: 4 } } });
    const sockets: RecordingSocket[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await connect('/binance/ws/btcusdt@depth@100ms');
      sockets.push(d);
      clock.advance(1000);
      await waitFor(() => d.closed, `connection ${i} dropped`);
    }
    expect(sockets.map((d) => d.messages.length)).toEqual([4, 4, 4]);
    expect(sockets.every((d) => d.closeCode === 1006)).toBe(true);
    expect(mv.stats().streams.binance.disconnects).toBe(3);

    mv.reset();
    mv.patchScenario({ streams: { binance: { disconnectEvery: 1_000_000, silenceForMs: 1500 } } });
    const q = await connect('/binance/ws/btcusdt@depth@100ms');
    clock.advance(1000);
    await waitFor(() => mv.stats().streams.binance.silencedMessages === 10, 'ten silenced diffs');
    clock.advance(500);
    await waitFor(() => q.messages.length === 5, 'five diffs after the silence');
    expect((q.messages[0] as Depth).U).toBeGreaterThan(0);
    expect(mv.stats().streams.binance).toMatchObject({ silencedMessages: 10, messagesSent: 5 });
  });

  test('limits: connection attempts per window (429), 1024 streams per connection, 5 incoming messages per second (close 1008); bad paths and outages', async () => {
    mv.patchScenario({ streams: { binance: { connectionAttempts: { limit: 2, windowMs: 60_000 } } } });
    await connect('/binance/ws');
    const s = await connect('/binance/ws');
    await expect(RecordingSocket.open(`${wsBase}/binance/ws`)).rejects.toThrow('HTTP 429');
    expect(mv.stats().streams.binance.connectionsRefused).toBe(1);
    clock.advance(60_000);
    mv.patchScenario({ streams: { binance: { connectionAttempts: { limit: 100, windowMs: 60_000 } } } });
    const names = Array.from({ length: 1025 }, (_, i) => `s${i}@trade`);
    await expect(RecordingSocket.open(`${wsBase}/binance/stream?streams=${names.join('/')}`)).rejects.toThrow('HTTP 400');
    const full = await connect(`/binance/stream?streams=${names.slice(0, 1024).join('/')}`);
    full.send({ method: 'SUBSCRIBE', params: ['btcusdt@trade'], id: 9 });
    expect(await full.next((m) => (m as { id: number }).id === 9, 'the 1025th stream refused')).toMatchObject({ code: 2, id: 9 });
    await expect(RecordingSocket.open(`${wsBase}/binance/api/v3/depth`)).rejects.toThrow('HTTP 400');
    await expect(RecordingSocket.open(`${wsBase}/nowhere`)).rejects.toThrow('HTTP 404');
    mv.patchScenario({ venues: { binance: { outageForMs: 1000 } } });
    await expect(RecordingSocket.open(`${wsBase}/binance/ws`)).rejects.toThrow();
    clock.advance(1000);
    for (let i = 0; i < 6; i++) s.send({ method: 'LIST_SUBSCRIPTIONS', id: i });
    await waitFor(() => s.closed, 'the flooding connection closed');
    expect(s.closeCode).toBe(1008);
    expect(mv.stats().streams.binance.rateLimitCloses).toBe(1);
  });
});
