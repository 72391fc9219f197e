import { z } from 'zod';
import { Timeframe, ValidationError } from '@tickfleet/core';

/** The venues the emulation hosts, each under its own path prefix (`/binance/...`). */
export const MOCK_VENUES = ['alpaca', 'binance', 'coinbase', 'finnhub', 'fred', 'kraken', 'limitless', 'polygon', 'polymarket', 'xetra'] as const;
export const MockVenueName = z.enum(MOCK_VENUES);
export type MockVenueName = z.infer<typeof MockVenueName>;

/** Seed of the deterministic data when a scenario does not give one. */
export const DEFAULT_SEED = 42;
/** How long a request drawn for `timeoutRate` is held before its socket is destroyed, unless `timeoutMs` says. */
export const DEFAULT_TIMEOUT_HOLD_MS = 30_000;
/** Statuses the 5xx errors of `errorRate` cycle through, unless `errorStatuses` says. */
export const DEFAULT_ERROR_STATUSES: readonly number[] = [500, 502, 503];

const epochMs = z.number().int().nonnegative();
const rate = z.number().min(0, 'a rate in 0..1').max(1, 'a rate in 0..1');
const positiveMs = z.number().int().positive();

/** A half-open wall-clock interval `[fromMs, toMs)` in epoch milliseconds. */
export const TimeWindow = z.strictObject({ fromMs: epochMs, toMs: epochMs }).refine((w) => w.toMs > w.fromMs, { message: 'toMs > fromMs', path: ['toMs'] });
export type TimeWindow = z.infer<typeof TimeWindow>;

/** Response latency: a fixed number of ms, or uniform in `[min, max]` ms. */
export const Latency = z.union(
  [
    z.number().nonnegative(),
    z.strictObject({ min: z.number().nonnegative(), max: z.number().nonnegative() }).refine((l) => l.max >= l.min, { message: 'max >= min', path: ['max'] }),
  ],
  { error: 'milliseconds as a number, or {"min": ms, "max": ms}' },
);
export type Latency = z.infer<typeof Latency>;

/**
 * A venue's own rate limit. `weight` (Binance) and `requests` (the others, where every request
 * weighs 1) are the same number: the allowance per window of `windowMs` (clock-aligned; sliding on
 * Polymarket, as it documents).
 */
export const VenueLimit = z
  .strictObject({
    weight: z.number().int().positive().optional(),
    requests: z.number().int().positive().optional(),
    windowMs: positiveMs.optional(),
    /** Binance: over-limit requests tolerated after the first 429 of a window before a 418 ban. @defaultValue 5 */
    banAfter: z.number().int().nonnegative().optional(),
    /** Binance: first ban length; each further ban doubles it. @defaultValue 120000 */
    banMs: positiveMs.optional(),
    /** Polymarket: over-limit requests are queued up to this long before a 429. @defaultValue 2000 */
    maxDelayMs: z.number().int().nonnegative().optional(),
    /** false turns the venue's limiter off. @defaultValue true */
    enabled: z.boolean().optional(),
    /** Limitless: requests the venue serves at once; one more arriving meanwhile is a 429. @defaultValue 2 on Limitless, else unlimited */
    maxConcurrent: z.number().int().positive().optional(),
  })
  .refine((l) => l.weight === undefined || l.requests === undefined, { message: 'either weight or requests, not both' });
export type VenueLimit = z.infer<typeof VenueLimit>;

/** Holes in the venue's own candle data: explicit ranges and/or a deterministic fraction of all candles. */
export const Holes = z.strictObject({
  rate: rate.optional(),
  ranges: z
    .array(
      z
        .strictObject({ symbol: z.string().min(1).optional(), timeframe: Timeframe.optional(), fromMs: epochMs, toMs: epochMs })
        .refine((r) => r.toMs > r.fromMs, { message: 'toMs > fromMs', path: ['toMs'] }),
    )
    .optional(),
});
export type Holes = z.infer<typeof Holes>;

/** Per-venue scenario controls; see docs/mock-venue.md for what each does. */
export const VenueScenario = z.strictObject({
  /** The venue's limit; on Polymarket the CLOB `/book` limit. */
  limit: VenueLimit.optional(),
  /** Polymarket: the Gamma API's own `/markets` limit, apart from the CLOB's (default 300 per sliding 10 s). */
  gammaLimit: VenueLimit.optional(),
  /** Polymarket: the CLOB batch `POST /books` limit, apart from `/book`'s (default 500 per sliding 10 s). */
  booksLimit: VenueLimit.optional(),
  latencyMs: Latency.optional(),
  /** Fraction of accepted requests answered 5xx. @defaultValue 0 */
  errorRate: rate.optional(),
  /** Statuses the 5xx errors cycle through (picked deterministically). @defaultValue {@link DEFAULT_ERROR_STATUSES} */
  errorStatuses: z.array(z.number().int().min(500).max(599)).min(1).optional(),
  /** Fraction of accepted requests held without an answer. @defaultValue 0 */
  timeoutRate: rate.optional(),
  /** How long a held request is kept before its socket is destroyed. @defaultValue {@link DEFAULT_TIMEOUT_HOLD_MS} */
  timeoutMs: positiveMs.optional(),
  /** Windows during which the venue's connections are destroyed unanswered. */
  outages: z.array(TimeWindow).optional(),
  /** Adds the outage `[now, now + outageForMs)` when the scenario is applied. */
  outageForMs: positiveMs.optional(),
  /** A 429 storm window; `null` ends a storm. */
  storm: TimeWindow.nullable().optional(),
  /** Sets the storm to `[now, now + stormForMs)` when the scenario is applied. */
  stormForMs: positiveMs.optional(),
  holes: Holes.optional(),
  /** Fraction of successful responses sent malformed (truncated JSON or a wrong shape). @defaultValue 0 */
  malformedRate: rate.optional(),
  /** Binance: the pairs exchangeInfo lists and klines/depth accept (tickfleet form, `BTC/USDT`). */
  symbols: z
    .array(z.string().regex(/^[A-Z0-9]{2,12}\/[A-Z0-9]{2,8}$/, 'a pair such as BTC/USDT'))
    .min(1)
    .optional(),
  /** Polymarket: how many markets the Gamma API lists (default 20); Limitless: how many top-level markets `/markets/active` lists (default 12). */
  markets: z.number().int().min(1).max(10_000).optional(),
  /** Polygon: the API keys the venue knows; any other key is answered 401 `Unknown API Key`. Absent: every key is accepted. */
  apiKeys: z.array(z.string().min(1)).min(1).optional(),
  /** Polygon: how many days back the plan's history reaches; a range starting earlier is answered 403 NOT_AUTHORIZED. Absent: unlimited. */
  historyDays: z.number().int().positive().optional(),
  /** Polymarket and Limitless: market ids (Gamma `id`, Limitless `id`) the discovery listing leaves out; their books are still served. */
  hiddenMarkets: z.array(z.string().min(1)).optional(),
  /**
   * Polymarket and Limitless: market id -> expiry (epoch ms) replacing the market's own end date. From
   * that time the market is over: Polymarket lists it `closed` and its books answer 404 (no order
   * book); Limitless lists it `expired` and leaves it out of `/markets/active`.
   */
  marketEnds: z.record(z.string().min(1), epochMs).optional(),
  /** Polymarket and Limitless: extra time before a discovery listing page (`/markets`, `/markets/active`) is answered. @defaultValue 0 */
  listingDelayMs: z.number().int().nonnegative().optional(),
  /** Polymarket: token ids whose book never changes (levels as at time 0; the timestamp and hash still change with each answer, as the CLOB's do). */
  idleBooks: z.array(z.string().min(1)).optional(),
  /** Polymarket and Limitless: instruments (token ids, slugs) whose book requests answer the venue's 500. */
  failingBooks: z.array(z.string().min(1)).optional(),
  /** Xetra: the ISINs traded in the files. */
  isins: z
    .array(z.string().regex(/^[A-Z]{2}[A-Z0-9]{9}[0-9]$/, 'an ISIN such as DE0007100000'))
    .min(1)
    .optional(),
});
export type VenueScenario = z.infer<typeof VenueScenario>;

/** The WebSocket emulations (`/binance/ws`, `/binance/stream`, `/kraken/v2`), keyed in `streams`. */
export const STREAM_VENUES = ['binance', 'kraken'] as const;
export type StreamVenueName = (typeof STREAM_VENUES)[number];

/**
 * Faults of one venue's WebSocket endpoints; see docs/mock-venue.md. "Data messages" are trades, book
 * diffs and book updates (not replies, heartbeats or pings), counted per connection from 1.
 */
export const StreamScenario = z.strictObject({
  /** Every Nth data message of a connection is not sent, so the client sees an update-id / trade-id gap. */
  gapEvery: z.number().int().min(2).optional(),
  /** The connection is dropped (TCP close, no close frame) right after its Nth data message. */
  disconnectEvery: z.number().int().positive().optional(),
  /** Windows during which nothing is sent on any connection (data is dropped, pings and heartbeats skipped). */
  silences: z.array(TimeWindow).optional(),
  /** Adds the silence `[now, now + silenceForMs)` when the scenario is applied. */
  silenceForMs: positiveMs.optional(),
  /** Fraction of data messages replaced by a garbled frame: half binary, half truncated JSON text. @defaultValue 0 */
  garbledRate: rate.optional(),
  /** Kraken: fraction of book messages sent with a wrong `checksum` (the levels stay right). @defaultValue 0 */
  checksumCorruptionRate: rate.optional(),
  /** Connection attempts allowed per sliding window; beyond, the upgrade is refused with HTTP 429. Binance default 300 per 300000 ms; Kraken none. */
  connectionAttempts: z.strictObject({ limit: z.number().int().positive(), windowMs: positiveMs }).optional(),
});
export type StreamScenario = z.infer<typeof StreamScenario>;

/**
 * A scenario: the seed of the deterministic data, outages of the whole server, and per-venue controls.
 * The same shape is a `PATCH /_mock/scenario` body (every field optional; see mergeScenario).
 */
export const Scenario = z.strictObject({
  /** @defaultValue {@link DEFAULT_SEED} */
  seed: z.number().int().nonnegative().optional(),
  /** Windows during which every venue prefix is down (admin endpoints stay up). */
  outages: z.array(TimeWindow).optional(),
  outageForMs: positiveMs.optional(),
  venues: z
    .strictObject({
      alpaca: VenueScenario.optional(),
      binance: VenueScenario.optional(),
      coinbase: VenueScenario.optional(),
      finnhub: VenueScenario.optional(),
      fred: VenueScenario.optional(),
      kraken: VenueScenario.optional(),
      limitless: VenueScenario.optional(),
      polygon: VenueScenario.optional(),
      polymarket: VenueScenario.optional(),
      xetra: VenueScenario.optional(),
    })
    .optional(),
  /** WebSocket faults per venue. */
  streams: z.strictObject({ binance: StreamScenario.optional(), kraken: StreamScenario.optional() }).optional(),
});
export type Scenario = z.infer<typeof Scenario>;

/** Validates a scenario; a bad one throws a ValidationError naming the field (`scenario.venues.binance.limit.weight`). */
export function parseScenario(value: unknown, what = 'scenario'): Scenario {
  const result = Scenario.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new ValidationError(what, 'a scenario object');
  const path = issue.path.map(String);
  let expected = issue.message.replace(/^Invalid input: /, '').replace(/^expected /, '');
  if (issue.code === 'unrecognized_keys') {
    path.push(issue.keys[0] ?? '?');
    expected = 'a known scenario field (see docs/mock-venue.md)';
  }
  throw new ValidationError(path.length > 0 ? `${what}.${path.join('.')}` : what, expected);
}

/**
 * Applies `patch` to `base` at wall-clock `nowMs`: fields given replace those of `base` (venue `limit`
 * objects merge key by key; `streams.<venue>` objects merge field by field), `storm: null` clears a storm, and
 * the relative `stormForMs` / `outageForMs` / `silenceForMs` become absolute windows from `nowMs`. The result holds no relative fields.
 */
export function mergeScenario(base: Scenario, patch: Scenario, nowMs: number): Scenario {
  const out: Scenario = { ...base, venues: { ...base.venues } };
  if (patch.seed !== undefined) out.seed = patch.seed;
  if (patch.outages !== undefined) out.outages = patch.outages;
  if (patch.outageForMs !== undefined) out.outages = [...(out.outages ?? []), { fromMs: nowMs, toMs: nowMs + patch.outageForMs }];
  delete out.outageForMs;
  for (const venue of MOCK_VENUES) {
    const p = patch.venues?.[venue];
    if (!p) continue;
    const prev = out.venues?.[venue] ?? {};
    const { stormForMs, outageForMs, ...rest } = p;
    const next: VenueScenario = { ...prev, ...rest };
    if (prev.limit && rest.limit) next.limit = mergeLimit(prev.limit, rest.limit);
    if (prev.gammaLimit && rest.gammaLimit) next.gammaLimit = mergeLimit(prev.gammaLimit, rest.gammaLimit);
    if (prev.booksLimit && rest.booksLimit) next.booksLimit = mergeLimit(prev.booksLimit, rest.booksLimit);
    if (rest.storm === null) delete next.storm;
    if (stormForMs !== undefined) next.storm = { fromMs: nowMs, toMs: nowMs + stormForMs };
    if (outageForMs !== undefined) next.outages = [...(next.outages ?? []), { fromMs: nowMs, toMs: nowMs + outageForMs }];
    delete next.stormForMs;
    delete next.outageForMs;
    out.venues = { ...out.venues, [venue]: next };
  }
  for (const venue of STREAM_VENUES) {
    const p = patch.streams?.[venue];
    if (!p) continue;
    const { silenceForMs, ...rest } = p;
    const next: StreamScenario = { ...out.streams?.[venue], ...rest };
    if (silenceForMs !== undefined) next.silences = [...(next.silences ?? []), { fromMs: nowMs, toMs: nowMs + silenceForMs }];
    out.streams = { ...out.streams, [venue]: next };
  }
  return out;
}

function mergeLimit(prev: VenueLimit, patch: VenueLimit): VenueLimit {
  const next = { ...prev, ...patch };
  // weight and requests are one number under two names: the newer one wins
  if (patch.weight !== undefined) delete next.requests;
  if (patch.requests !== undefined) delete next.weight;
  return next;
}

/** A venue's limit with defaults filled in. */
export interface EmulatedLimit {
  enabled: boolean;
  /** Allowance (weight units; 1 per request except on Binance) per window. */
  limit: number;
  windowMs: number;
  banAfter: number;
  banMs: number;
  maxDelayMs: number;
  /** Requests served at once; one more arriving meanwhile is refused (429). Absent: unlimited. */
  maxConcurrent?: number;
}

/**
 * Published defaults: Alpaca 200 requests per minute (market data on the Basic plan); Binance 6000 weight per clock minute (bans after 5 more requests, 2 min);
 * Finnhub free plan 60 requests per minute (its 30 per second cap lives in the emulation);
 * Polygon free tier 5 requests per minute; Polymarket CLOB `/book` 1500 per sliding 10 s, queued up
 * to 2 s (Gamma `/markets` has its own limit, POLYMARKET_GAMMA_LIMIT);
 * Xetra no published limit, the emulation paces at 5 per 2 s; FRED 120 requests per minute (per key); Limitless at most 2
 * concurrent requests and at least 300 ms between calls, 429 beyond (its API introduction): one request per sliding 300 ms;
 * Kraken's call counter (Starter tier: at most 15, decaying 0.33 a second, so it drains from full in 45 s; every public call adds 1); Coinbase Exchange's public endpoints
 * 10 requests per second per IP.
 */
export const DEFAULT_LIMITS: Record<MockVenueName, EmulatedLimit> = {
  alpaca: { enabled: true, limit: 200, windowMs: 60_000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  binance: { enabled: true, limit: 6000, windowMs: 60_000, banAfter: 5, banMs: 120_000, maxDelayMs: 0 },
  coinbase: { enabled: true, limit: 10, windowMs: 1000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  finnhub: { enabled: true, limit: 60, windowMs: 60_000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  fred: { enabled: true, limit: 120, windowMs: 60_000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  kraken: { enabled: true, limit: 15, windowMs: 45_000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  limitless: { enabled: true, limit: 1, windowMs: 300, banAfter: 0, banMs: 0, maxDelayMs: 0, maxConcurrent: 2 },
  polygon: { enabled: true, limit: 5, windowMs: 60_000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
  polymarket: { enabled: true, limit: 1500, windowMs: 10_000, banAfter: 0, banMs: 0, maxDelayMs: 2000 },
  xetra: { enabled: true, limit: 5, windowMs: 2000, banAfter: 0, banMs: 0, maxDelayMs: 0 },
};

/**
 * Polymarket's Gamma `/markets`: 300 requests per sliding 10 s (docs.polymarket.com/api-reference/rate-limits),
 * throttled by the same Cloudflare queue as the CLOB.
 */
export const POLYMARKET_GAMMA_LIMIT: EmulatedLimit = { enabled: true, limit: 300, windowMs: 10_000, banAfter: 0, banMs: 0, maxDelayMs: 2000 };

/**
 * Polymarket's CLOB batch `POST /books`: 500 requests per sliding 10 s, whatever the number of books
 * asked (up to {@link POLYMARKET_MAX_BOOKS_PER_REQUEST}); docs.polymarket.com/api-reference/rate-limits.
 */
export const POLYMARKET_BOOKS_LIMIT: EmulatedLimit = { enabled: true, limit: 500, windowMs: 10_000, banAfter: 0, banMs: 0, maxDelayMs: 2000 };
/** Books one `POST /books` may ask for (docs.polymarket.com, "Fetch Multiple Order Books": maximum 500 items per request). */
export const POLYMARKET_MAX_BOOKS_PER_REQUEST = 500;

/** Polymarket's `POST /books` limit with defaults filled in. */
export function booksLimit(limit: VenueLimit | undefined): EmulatedLimit {
  return fillLimit(POLYMARKET_BOOKS_LIMIT, limit, 0);
}

/** Polymarket's Gamma `/markets` limit with defaults filled in. */
export function gammaLimit(limit: VenueLimit | undefined): EmulatedLimit {
  return fillLimit(POLYMARKET_GAMMA_LIMIT, limit, 0);
}

/**
 * The limit the emulated `venue` enforces: its published default with the scenario's overrides
 * filled in. Not core's `effectiveLimit` (the share of a connector's limit tickfleet spends).
 */
export function emulatedLimit(venue: MockVenueName, limit: VenueLimit | undefined): EmulatedLimit {
  return fillLimit(DEFAULT_LIMITS[venue], limit, venue === 'binance' ? DEFAULT_LIMITS.binance.banAfter : 0);
}

function fillLimit(d: EmulatedLimit, limit: VenueLimit | undefined, banAfter: number): EmulatedLimit {
  return {
    enabled: limit?.enabled ?? d.enabled,
    limit: limit?.weight ?? limit?.requests ?? d.limit,
    windowMs: limit?.windowMs ?? d.windowMs,
    banAfter: limit?.banAfter ?? banAfter,
    banMs: limit?.banMs ?? d.banMs,
    maxDelayMs: limit?.maxDelayMs ?? d.maxDelayMs,
    ...(limit?.maxConcurrent !== undefined || d.maxConcurrent !== undefined ? { maxConcurrent: limit?.maxConcurrent ?? d.maxConcurrent } : {}),
  };
}
