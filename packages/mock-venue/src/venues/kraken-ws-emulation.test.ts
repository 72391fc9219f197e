import { ManualClock, waitFor } from '@tickfleet/testkit';
import { RecordingSocket } from '../../test/ws-test-client.js';
import { startMockVenue, type MockVenue } from '../mock-venue-server.js';
import { krakenChecksum, type KrakenLevelText } from './kraken-checksum.js';
import { KRAKEN_QTY_DECIMALS, krakenModel, krakenPricePrecision } from './kraken-ws-emulation.js';

const T0 = Date.UTC(2024, 0, 15, 8, 0, 30);
const SEED = 42;

interface Level {
  price: number;
  qty: number;
}
interface BookMessage {
  channel: 'book';
  type: 'snapshot' | 'update';
  data: Array<{ symbol: string; bids: Level[]; asks: Level[]; checksum: number; timestamp: string }>;
}
const isBook = (m: unknown): m is BookMessage => (m as BookMessage).channel === 'book';

/** Kraken's book guide: apply every level, drop qty 0, truncate to the subscribed depth, then checksum the top 10. */
class KrakenBook {
  bids = new Map<number, number>();
  asks = new Map<number, number>();
  constructor(
    private readonly depth: number,
    private readonly priceDecimals: number,
  ) {}

  /** Applies a book message; true when the local top 10 matches its checksum. */
  apply(m: BookMessage): boolean {
    const d = m.data[0]!;
    if (m.type === 'snapshot') {
      this.bids.clear();
      this.asks.clear();
    }
    for (const l of d.bids)
      if (l.qty === 0) this.bids.delete(l.price);
      else this.bids.set(l.price, l.qty);
    for (const l of d.asks)
      if (l.qty === 0) this.asks.delete(l.price);
      else this.asks.set(l.price, l.qty);
    this.bids = new Map(this.sortedBids().slice(0, this.depth));
    this.asks = new Map(this.sortedAsks().slice(0, this.depth));
    const text = (levels: Array<[number, number]>): KrakenLevelText[] =>
      levels.slice(0, 10).map(([p, q]) => [p.toFixed(this.priceDecimals), q.toFixed(KRAKEN_QTY_DECIMALS)]);
    return krakenChecksum(text(this.sortedAsks()), text(this.sortedBids())) === d.checksum;
  }

  sortedBids(): Array<[number, number]> {
    return [...this.bids].sort((a, b) => b[0] - a[0]);
  }

  sortedAsks(): Array<[number, number]> {
    return [...this.asks].sort((a, b) => a[0] - b[0]);
  }
}

describe('kraken WebSocket v2 emulation', () => {
  let mv: MockVenue;
  let clock: ManualClock;
  let url: string;
  const sockets: RecordingSocket[] = [];

  beforeEach(async () => {
    clock = new ManualClock(T0);
    mv = await startMockVenue({ clock });
    url = `${mv.url.replace('http://', 'ws://')}/kraken/v2`;
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.ws.terminate();
    await mv.stop();
  });

  test("the checksum reproduces Kraken's documented worked example and a live BTC/USDT snapshot", () => {
    // docs.kraken.com "Book checksum (WebSocket v2)" example: BTC/USD, expected 3310070434
    const asks: KrakenLevelText[] = [
      ['45285.2', '0.00100000'],
      ['45286.4', '1.54571953'],
      ['45286.6', '1.54571109'],
      ['45289.6', '1.54560911'],
      ['45290.2', '0.15890660'],
      ['45291.8', '1.54553491'],
      ['45294.7', '0.04454749'],
      ['45296.1', '0.35380000'],
      ['45297.5', '0.09945542'],
      ['45299.5', '0.18772827'],
    ];
    const bids: KrakenLevelText[] = [
      ['45283.5', '0.10000000'],
      ['45283.4', '1.54582015'],
      ['45282.1', '0.10000000'],
      ['45281.0', '0.10000000'],
      ['45280.3', '1.54592586'],
      ['45279.0', '0.07990000'],
      ['45277.6', '0.03310103'],
      ['45277.5', '0.30000000'],
      ['45277.3', '1.54602737'],
      ['45276.6', '0.15445238'],
    ];
    expect(krakenChecksum(asks, bids)).toBe(3310070434);
    // a recorded wss://ws.kraken.com/v2 BTC/USDT snapshot (github.com/poldeperez/bot_arbitratge, tests/test_checksum_kraken.py), top 10 of 25
    const liveAsks: KrakenLevelText[] = [
      ['105906.8', '0.05665135'],
      ['105910.0', '0.70000000'],
      ['105910.6', '0.06080300'],
      ['105911.3', '0.28682600'],
      ['105915.8', '0.00061514'],
      ['105916.6', '0.09439743'],
      ['105918.9', '0.54378900'],
      ['105921.1', '0.09439338'],
      ['105925.8', '0.04300000'],
      ['105926.0', '0.09438908'],
      ['105927.7', '0.02821348'],
    ];
    const liveBids: KrakenLevelText[] = [
      ['105906.7', '0.09440620'],
      ['105901.7', '0.02297789'],
      ['105901.6', '0.09441075'],
      ['105901.4', '0.02400000'],
      ['105897.8', '0.01980353'],
      ['105897.6', '0.01877140'],
      ['105894.1', '0.00590000'],
      ['105894.0', '0.06080500'],
      ['105892.9', '0.05700000'],
      ['105889.1', '0.00630000'],
      ['105888.7', '0.05665135'],
    ];
    expect(krakenChecksum(liveAsks, liveBids)).toBe(4162058887);
  });

  test('status, subscribe acks, book snapshot then updates: every checksum verifies and the book ends equal to the emulation', async () => {
    const s = await RecordingSocket.open(url);
    sockets.push(s);
    expect(await s.next((m) => (m as { channel: string }).channel === 'status', 'status')).toMatchObject({
      channel: 'status',
      type: 'update',
      data: [{ api_version: 'v2', system: 'online' }],
    });
    s.send({ method: 'subscribe', params: { channel: 'book', symbol: ['BTC/USD', 'NOPE/USD'], depth: 25 }, req_id: 7 });
    const ack = await s.next<Record<string, unknown>>((m) => (m as { success: boolean }).success === true, 'subscribe ack');
    expect(ack).toMatchObject({ method: 'subscribe', req_id: 7, result: { channel: 'book', depth: 25, snapshot: true, symbol: 'BTC/USD' } });
    expect(Object.keys(ack).sort()).toEqual(['method', 'req_id', 'result', 'success', 'time_in', 'time_out']);
    expect(await s.next((m) => (m as { success: boolean }).success === false, 'unknown pair refused')).toMatchObject({
      method: 'subscribe',
      success: false,
      symbol: 'NOPE/USD',
      req_id: 7,
    });
    await s.next(isBook, 'book snapshot');
    clock.advance(3000);
    await waitFor(() => s.messages.filter(isBook).length === 31, 'thirty book updates');
    // BTC/USD prices carry Kraken's pair_decimals for the pair: 1.
    expect(krakenPricePrecision('BTC/USD', SEED)).toBe(1);
    const book = new KrakenBook(25, krakenPricePrecision('BTC/USD', SEED));
    const msgs = s.messages.filter(isBook);
    for (const m of msgs) for (const l of [...m.data[0]!.bids, ...m.data[0]!.asks]) expect(Math.round(l.price * 10) / 10).toBe(l.price);
    expect(msgs[0]!.type).toBe('snapshot');
    expect(msgs.slice(1).every((m) => m.type === 'update')).toBe(true);
    for (const m of msgs) expect(book.apply(m)).toBe(true);
    const model = krakenModel('BTC/USD', SEED);
    const truth = model.levels(Math.floor(clock.now() / 100) - 1, 25);
    expect(book.sortedBids()).toEqual(truth.bids.map(([p, q]) => [Number(model.formatPrice(p)), Number(model.formatQty(q))]));
    expect(book.sortedAsks()).toEqual(truth.asks.map(([p, q]) => [Number(model.formatPrice(p)), Number(model.formatQty(q))]));
    expect(s.messages).toContainEqual({ channel: 'heartbeat' });
    s.send({ method: 'ping', req_id: 8 });
    expect(await s.next((m) => (m as { method: string }).method === 'pong', 'pong')).toMatchObject({ method: 'pong', req_id: 8 });
  });

  test('checksum corruption: exactly the corrupted updates fail the check, and a resubscribe brings a verified snapshot', async () => {
    mv.patchScenario({ streams: { kraken: { checksumCorruptionRate: 0.25 } } });
    const s = await RecordingSocket.open(url);
    sockets.push(s);
    s.send({ method: 'subscribe', params: { channel: 'book', symbol: ['ETH/USD'], depth: 10 }, req_id: 1 });
    await s.next(isBook, 'book snapshot');
    clock.advance(4000);
    await waitFor(() => s.messages.filter(isBook).length === 41, 'forty updates');
    // corruption spoils only the checksum field, so a client that keeps applying stays right and sees each one
    const book = new KrakenBook(10, krakenPricePrecision('ETH/USD', SEED));
    const verdicts = s.messages.filter(isBook).map((m) => book.apply(m));
    const corruptions = mv.stats().streams.kraken.checksumCorruptions;
    expect(verdicts.filter((ok) => !ok)).toHaveLength(corruptions);
    expect(corruptions).toBeGreaterThan(3);
    // Kraken's advice on a mismatch: resubscribe for a fresh snapshot
    s.send({ method: 'unsubscribe', params: { channel: 'book', symbol: ['ETH/USD'], depth: 10 }, req_id: 2 });
    expect(await s.next((m) => (m as { req_id: number }).req_id === 2, 'unsubscribe ack')).toMatchObject({ method: 'unsubscribe', success: true });
    const before = s.messages.length;
    s.send({ method: 'subscribe', params: { channel: 'book', symbol: ['ETH/USD'], depth: 10 }, req_id: 3 });
    const snap = await s.next<BookMessage>(isBook, 'the fresh snapshot', before);
    expect(snap.type).toBe('snapshot');
    expect(new KrakenBook(10, krakenPricePrecision('ETH/USD', SEED)).apply(snap)).toBe(true);
  });

  test('trade channel: a 50-trade snapshot, then updates with contiguous trade ids and the documented fields', async () => {
    const s = await RecordingSocket.open(url);
    sockets.push(s);
    s.send({ method: 'subscribe', params: { channel: 'trade', symbol: ['SOL/USD'] }, req_id: 3 });
    const snap = await s.next<{ data: Array<{ trade_id: number }> }>((m) => (m as { type: string; channel: string }).channel === 'trade', 'trade snapshot');
    expect(snap.data).toHaveLength(50);
    clock.advance(3000);
    const model = krakenModel('SOL/USD', SEED);
    const lastId = model.lastTradeId(Math.floor(clock.now() / 100) - 1);
    await waitFor(() => {
      const ids = s.messages.filter((m) => (m as { channel: string }).channel === 'trade').flatMap((m) => (m as typeof snap).data.map((t) => t.trade_id));
      return ids[ids.length - 1] === lastId;
    }, 'trades up to the last closed tick');
    const trades = s.messages
      .filter((m) => (m as { channel: string }).channel === 'trade')
      .flatMap((m) => (m as { data: Array<Record<string, unknown>> }).data);
    for (let i = 1; i < trades.length; i++) expect(trades[i]!.trade_id).toBe((trades[i - 1]!.trade_id as number) + 1);
    expect(Object.keys(trades[0]!).sort()).toEqual(['ord_type', 'price', 'qty', 'side', 'symbol', 'timestamp', 'trade_id']);
    expect(trades[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});
