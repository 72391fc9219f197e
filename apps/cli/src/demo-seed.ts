import type { Env } from '@tickfleet/config';
import { jobId, LIMITLESS_CONNECTOR_DEFAULTS, type StreamInput, VENUE_RATE_LIMIT_DEFAULTS } from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';

const DAY = 86_400_000;
/** How far back the demo's Polygon day-bar job starts (see seedDemo). */
const POLYGON_DEMO_DAYS = 5;

/** The demo's streams: trade holes of both are healed from their venue's REST API, under its connector's budget. */
const DEMO_STREAMS: readonly StreamInput[] = [
  { name: 'demo-binance', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT', 'SOL/USDT'], channels: ['trades', 'book'], bookDepth: 100 },
  { name: 'demo-kraken', venue: 'kraken', symbols: ['BTC/USD', 'ETH/USD'], channels: ['trades', 'book'], bookDepth: 10 },
];

/**
 * The demo emulation drops a stream message now and then (every Nth data message of a
 * connection), so a new user sees within a minute what the streams do about it: Binance trade
 * and Kraken trade gaps healed from REST (aggTrades/historicalTrades, Trades) and books resynchronised.
 * A mock-venue Scenario, type-checked where up.ts passes it (the emulation is loaded only for --demo).
 */
export const DEMO_SCENARIO = { streams: { binance: { gapEvery: 400 }, kraken: { gapEvery: 400 } } };

/** The workers' WebSocket roots: the emulation's stream endpoints beside its REST ones. */
export function demoStreamEnv(mockUrl: string): Env {
  const ws = mockUrl.replace(/^http/, 'ws');
  return { TICKFLEET_BINANCE_WS_URL: `${ws}/binance`, TICKFLEET_KRAKEN_WS_URL: `${ws}/kraken/v2` };
}

/** Keys the demo's emulations accept (FRED's must be 32 lower-case alphanumerics, Alpaca's id upper-case). */
export const DEMO_KEYS = {
  POLYGON_API_KEY: 'demo',
  FINNHUB_API_KEY: 'demo',
  FRED_API_KEY: 'demodemodemodemodemodemodemodemo',
  ALPACA_API_KEY_ID: 'PKDEMODEMODEMO',
  ALPACA_API_SECRET_KEY: 'demo-secret-key',
} as const;

/**
 * The demo fleet: each venue emulation with its real published limits, candle jobs (Kraken's and
 * Coinbase's through the CCXT engine) that start a
 * few hours back (so history arrives at once, then live candles every minute), Coinbase's polled
 * trades, Polymarket and
 * Limitless discovery feeding order-book polling, Xetra's post-trade files, Alpaca day bars (per-day
 * units), Finnhub option chains over a small universe and FRED's Treasury curve; and the WebSocket
 * half: a Binance and a Kraken stream (trades and books) against the emulations' stream endpoints.
 * What the user changed in an earlier run in the same directory (a job, a stream) is kept.
 */
export async function seedDemo(
  store: StateStore,
  baseUrl: (venue: 'alpaca' | 'binance' | 'coinbase' | 'finnhub' | 'fred' | 'kraken' | 'limitless' | 'polygon' | 'polymarket' | 'xetra') => string,
): Promise<void> {
  const now = Date.now();
  await store.connectors.upsert({ venue: 'binance', baseUrl: baseUrl('binance'), rateLimit: { limit: 6000, periodMs: 60_000 }, maxInflight: 4 });
  await store.connectors.upsert({ venue: 'polygon', baseUrl: baseUrl('polygon'), rateLimit: { limit: 5, periodMs: 60_000 }, maxInflight: 1 });
  // Polymarket's CLOB allows 1500 per sliding 10 s: a sliding-window budget at those numbers
  // (docs/mock-venue.md#limits). Its books are polled by the book loop every second, in POST /books
  // batches (2 shares: the demo's few dozen tokens fit one batch each).
  await store.connectors.upsert({
    venue: 'polymarket',
    baseUrl: baseUrl('polymarket'),
    rateLimit: { ...VENUE_RATE_LIMIT_DEFAULTS.polymarket! },
    maxInflight: 4,
    bookLoop: { cadenceMs: 1000, shares: 2 },
  });
  // Limitless documents at most 2 concurrent requests and at least 300 ms between calls.
  await store.connectors.upsert({
    venue: 'limitless',
    baseUrl: baseUrl('limitless'),
    rateLimit: { ...LIMITLESS_CONNECTOR_DEFAULTS.rateLimit },
    maxInflight: LIMITLESS_CONNECTOR_DEFAULTS.maxInflight,
  });
  await store.connectors.upsert({ venue: 'xetra', baseUrl: baseUrl('xetra'), rateLimit: { limit: 5, periodMs: 2000, headroom: 1 }, maxInflight: 1 });
  await store.connectors.upsert({ venue: 'alpaca', baseUrl: baseUrl('alpaca'), rateLimit: { limit: 200, periodMs: 60_000 } });
  await store.connectors.upsert({ venue: 'finnhub', baseUrl: baseUrl('finnhub'), rateLimit: { limit: 60, periodMs: 60_000 } });
  await store.connectors.upsert({ venue: 'fred', baseUrl: baseUrl('fred'), rateLimit: { limit: 120, periodMs: 60_000 } });
  // Kraken through the CCXT engine: its call counter (15, drained in 45 s) is a leaky bucket, as GCRA is.
  await store.connectors.upsert({ venue: 'kraken', baseUrl: baseUrl('kraken'), rateLimit: { policy: 'gcra', limit: 15, periodMs: 45_000 }, maxInflight: 2 });
  // Coinbase Exchange through the CCXT engine: 10 public requests a second.
  await store.connectors.upsert({ venue: 'coinbase', baseUrl: baseUrl('coinbase'), rateLimit: { limit: 10, periodMs: 1000 }, maxInflight: 2 });
  if (!(await store.universes.get('finnhub', 'megacaps'))) await store.universes.set('finnhub', 'megacaps', ['AAPL', 'MSFT', 'NVDA']);
  const jobs = [
    { venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'binance', type: 'ohlcv', symbol: 'ETH/USDT', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1h', since: now - 30 * DAY },
    // Kraken keeps the 720 newest candles of an interval: six hours of minutes are within them.
    { venue: 'kraken', type: 'ohlcv', symbol: 'BTC/USD', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'kraken', type: 'ohlcv', symbol: 'ETH/USD', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'coinbase', type: 'ohlcv', symbol: 'BTC/USD', timeframe: '1m', since: now - DAY },
    // Coinbase has no stream in the demo: its trades are polled (a request a minute, 1,000 trades a page).
    { venue: 'coinbase', type: 'trades', symbol: 'BTC/USD', timeframe: null, since: null },
    // Day bars: US-equity minutes exist only in sessions, day bars of past sessions whenever the demo starts.
    // Five days hold two to four past sessions: at Polygon's 5 requests a minute (one a session day)
    // the job is caught up within a minute or two instead of starting weeks behind.
    { venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', since: now - POLYGON_DEMO_DAYS * DAY },
    { venue: 'polymarket', type: 'discovery', symbol: 'markets', timeframe: null, since: null },
    { venue: 'limitless', type: 'discovery', symbol: 'markets', timeframe: null, since: null },
    { venue: 'xetra', type: 'files', symbol: 'DETR', timeframe: null, since: null },
    { venue: 'alpaca', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', since: now - 30 * DAY },
    { venue: 'finnhub', type: 'options', symbol: '@megacaps', timeframe: null, since: null },
    { venue: 'fred', type: 'series', symbol: 'treasury-curve', timeframe: null, since: now - 30 * DAY },
  ] as const;
  for (const j of jobs) {
    const existing = await store.jobs.get(jobId({ venue: j.venue, type: j.type, symbol: j.symbol, timeframe: j.timeframe ?? undefined }));
    if (existing) continue;
    await store.jobs.upsert({ ...j, nextRunAt: now });
  }
  for (const s of DEMO_STREAMS) if (!(await store.streams.get(s.name))) await store.streams.upsert(s);
}
