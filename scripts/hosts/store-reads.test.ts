import { candleEnvelope } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { startMongoWire, type MongoWireHandle } from '@tickfleet/mongo-wire';
import { openSink } from '@tickfleet/sinks';
import { compareCandles } from '@tickfleet/testkit';
import { startDelayProxy, type DelayProxy } from './delay-proxy.js';
import { storedOpenTimes } from './store-reads.js';

const VENUE = 'binance';
const SYMBOL = 'BTC/USDT';
const FROM = Date.UTC(2024, 0, 1);
const N = 5000;
const TO = FROM + N * 60_000;

const candles = (fromMs: number, toMs: number): ReturnType<typeof candleEnvelope>[] =>
  expectedCandles(VENUE, SYMBOL, '1m', fromMs, toMs, DEFAULT_SEED).map((c) => candleEnvelope(c, c.openTime + 60_100));

/**
 * The MongoDB sink and the host scenarios' end-check reads over a link that breaks mid-request
 * (the delaying proxy of scripts/hosts resetting its connections), against the in-repo wire
 * server: what the link-cut scenario does to a worker host's store link, without namespaces.
 */
describe('the MongoDB sink over a link reset mid-request', () => {
  let server: MongoWireHandle;
  let proxy: DelayProxy;
  let proxied: string;
  beforeEach(async () => {
    server = await startMongoWire();
    proxy = await startDelayProxy({ listenHost: '127.0.0.1', listenPort: 0, targetHost: '127.0.0.1', targetPort: server.port }, 1);
    proxied = `mongodb://127.0.0.1:${proxy.port}/data`;
  });
  afterEach(async () => {
    await proxy.close();
    await server.stop();
  });

  it('a write whose reply the reset lost is stored once: the sink retries it and counts the copies as duplicates', async () => {
    const sink = await openSink(proxied, { retry: { maxRetries: 10, retryBaseMs: 20 } });
    try {
      // Connected, indexes made: the reset hits the insert itself.
      await sink.write(candles(FROM, FROM + 60_000));
      proxy.cut({ requestBytes: 100_000, replyBytes: 1 });
      const res = await sink.write(candles(FROM + 60_000, TO));
      expect(proxy.cuts).toBeGreaterThan(0);
      // The server had applied the insert when its reply was lost: the retry found every candle there.
      expect(res.duplicates).toBeGreaterThan(0);
      expect(res.inserted + res.duplicates).toBe(N - 1);
    } finally {
      await sink.close();
    }
    const direct = await openSink(`${server.url}data`);
    try {
      expect(await direct.reader!.countCandles({ venue: VENUE, symbol: SYMBOL, timeframe: '1m' })).toMatchObject({ count: N });
    } finally {
      await direct.close();
    }
  });

  it("the end check's read, reset mid-stream and retried, reads each stored candle once", async () => {
    const direct = await openSink(`${server.url}data`);
    try {
      await direct.write(candles(FROM, TO));
    } finally {
      await direct.close();
    }
    // About 250 KB a page of 1,000 candles: the reset hits the second page's getMore, which the driver does not retry.
    proxy.cut({ replyBytes: 400_000 });
    const retries: Error[] = [];
    const stored = await storedOpenTimes(proxied, { venue: VENUE, symbol: SYMBOL, fromMs: FROM, toMs: TO }, { pauseMs: 10, onRetry: (e) => retries.push(e) });
    expect(proxy.cuts).toBeGreaterThan(0);
    expect(retries).toHaveLength(1);
    const expected = new Set(expectedCandles(VENUE, SYMBOL, '1m', FROM, TO, DEFAULT_SEED).map((c) => c.openTime));
    expect(compareCandles(stored, expected)).toMatchObject({ expected: N, stored: N, missing: 0, duplicates: 0, unexpected: 0 });
  });
});
