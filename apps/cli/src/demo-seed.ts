import { jobId } from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';

const DAY = 86_400_000;

/** Keys the demo's emulations accept (FRED's must be 32 lower-case alphanumerics, Alpaca's id upper-case). */
export const DEMO_KEYS = {
  POLYGON_API_KEY: 'demo',
  FINNHUB_API_KEY: 'demo',
  FRED_API_KEY: 'demodemodemodemodemodemodemodemo',
  ALPACA_API_KEY_ID: 'PKDEMODEMODEMO',
  ALPACA_API_SECRET_KEY: 'demo-secret-key',
} as const;

/**
 * The demo fleet: each venue emulation with its real published limits, candle jobs that start a
 * few hours back (so history arrives at once, then live candles every minute), Polymarket and
 * Limitless discovery feeding order-book polling, Xetra's post-trade files, Alpaca day bars (per-day
 * units), Finnhub option chains over a small universe and FRED's Treasury curve.
 */
export async function seedDemo(
  store: StateStore,
  baseUrl: (venue: 'alpaca' | 'binance' | 'finnhub' | 'fred' | 'limitless' | 'polygon' | 'polymarket' | 'xetra') => string,
): Promise<void> {
  const now = Date.now();
  await store.connectors.upsert({ venue: 'binance', baseUrl: baseUrl('binance'), rateLimit: { limit: 6000, periodMs: 60_000 }, maxInflight: 4 });
  await store.connectors.upsert({ venue: 'polygon', baseUrl: baseUrl('polygon'), rateLimit: { limit: 5, periodMs: 60_000 }, maxInflight: 1 });
  // Polymarket's CLOB allows 1500 per sliding 10 s; a fixed-window budget at half of it can never
  // put more than that into any sliding window (docs/mock-venue.md#limits).
  await store.connectors.upsert({ venue: 'polymarket', baseUrl: baseUrl('polymarket'), rateLimit: { limit: 750, periodMs: 10_000 }, maxInflight: 4 });
  // Limitless publishes no numeric limit; this is the emulation's opaque one (docs/mock-venue.md).
  await store.connectors.upsert({ venue: 'limitless', baseUrl: baseUrl('limitless'), rateLimit: { limit: 100, periodMs: 10_000 }, maxInflight: 2 });
  await store.connectors.upsert({ venue: 'xetra', baseUrl: baseUrl('xetra'), rateLimit: { limit: 5, periodMs: 2000, headroom: 1 }, maxInflight: 1 });
  await store.connectors.upsert({ venue: 'alpaca', baseUrl: baseUrl('alpaca'), rateLimit: { limit: 200, periodMs: 60_000 } });
  await store.connectors.upsert({ venue: 'finnhub', baseUrl: baseUrl('finnhub'), rateLimit: { limit: 60, periodMs: 60_000 } });
  await store.connectors.upsert({ venue: 'fred', baseUrl: baseUrl('fred'), rateLimit: { limit: 120, periodMs: 60_000 } });
  if (!(await store.universes.get('finnhub', 'megacaps'))) await store.universes.set('finnhub', 'megacaps', ['AAPL', 'MSFT', 'NVDA']);
  const jobs = [
    { venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'binance', type: 'ohlcv', symbol: 'ETH/USDT', timeframe: '1m', since: now - 6 * 3600_000 },
    { venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1h', since: now - 30 * DAY },
    // Day bars: US-equity minutes exist only in sessions, day bars of past sessions whenever the demo starts.
    { venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', since: now - 30 * DAY },
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
}
