import { MalformedPayloadError, optionContractEnvelope, type OptionContract } from '@tickfleet/core';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { durationOption, intOption, sleep } from '../internal/options.js';
import { decimalString } from '../internal/parse-payload.js';
import type { FetchOptions, OptionChainSource, OptionChainSnapshot, VenueAdapterOptions } from '../types.js';
import { alignedWindowPolicy, type HttpRequest, type HttpResponse, type ResponseHeaders } from '../venue-http-client.js';
import { FinnhubOptionChain, type FinnhubOptionContract } from './finnhub-schemas.js';

/** The defaults of {@link FinnhubAdapterOptions}. */
export const FINNHUB_DEFAULTS = Object.freeze({
  /** Finnhub's plan limits count per aligned minute. */
  rateLimitWindowMs: 60_000,
  /** Finnhub's cap on top of every plan. */
  burstPerSecond: 30,
  maxInflight: 1,
});

export interface FinnhubAdapterOptions extends VenueAdapterOptions {
  /**
   * API key (the worker passes its FINNHUB_API_KEY); required before the first request. Sent in
   * the `X-Finnhub-Token` header, never in the URL, so no URL the fleet logs can carry it.
   */
  finnhubApiKey?: string;
  /** Length of the plan's request window (aligned minutes at Finnhub). @defaultValue FINNHUB_DEFAULTS.rateLimitWindowMs */
  rateLimitWindowMs?: number;
  /** Finnhub's cap on top of every plan: requests per second. @defaultValue FINNHUB_DEFAULTS.burstPerSecond */
  burstPerSecond?: number;
  /**
   * The fleet-wide number of requests in flight (the connector's `maxInflight`; the worker passes
   * it). Each request holds its slot for `maxInflight * 1000 / (0.9 * burstPerSecond)` ms after
   * its answer, so the whole fleet stays under 90 % of the per-second cap. @defaultValue FINNHUB_DEFAULTS.maxInflight
   */
  maxInflight?: number;
}

const BURST_HEADROOM = 0.9;
const NY_PARTS = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  hourCycle: 'h23',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/**
 * Finnhub option chains: one request per underlier returns every expiration with its calls and
 * puts. Both Finnhub limits are respected: the plan's per-minute count through the fleet budget
 * (the connector's limit, corrected by `X-Ratelimit-Remaining` of the window ending at
 * `X-Ratelimit-Reset`, as Binance's used-weight header corrects it), and the 30-per-second cap by
 * spacing: the fleet runs at most `maxInflight` units at once and each request keeps its unit's
 * slot for a minimum time, which bounds the fleet's request rate whatever the number of workers.
 */
export class FinnhubAdapter extends HttpVenueAdapter<'optionChain', 'apiKey'> implements OptionChainSource {
  /** How long each request keeps its slot, from its answer on (the per-second spacing). */
  readonly slotHoldMs: number;

  constructor(options: FinnhubAdapterOptions) {
    const windowMs = durationOption('rateLimitWindowMs', options.rateLimitWindowMs, FINNHUB_DEFAULTS.rateLimitWindowMs);
    super(options, {
      venue: 'finnhub',
      weights: { optionChain: 1 },
      // Finnhub's 429 carries no Retry-After; its minute windows are clock-aligned, so the window end is the retry time.
      limits: { readUsage: (headers) => rateLimitUsage(headers, windowMs), errorPolicy: alignedWindowPolicy(windowMs) },
      credentials: { apiKey: { value: options.finnhubApiKey, option: 'finnhubApiKey', env: 'FINNHUB_API_KEY', what: 'a Finnhub API key' } },
    });
    const burst = intOption('burstPerSecond', options.burstPerSecond, FINNHUB_DEFAULTS.burstPerSecond, 1, 10_000);
    const inflight = intOption('maxInflight', options.maxInflight, FINNHUB_DEFAULTS.maxInflight, 1, 1000);
    this.slotHoldMs = Math.ceil((inflight * 1000) / (BURST_HEADROOM * burst));
  }

  /** The underlier's whole chain now: one contract record per call and put of every expiration. */
  async fetchOptionChain(symbol: string, options: FetchOptions = {}): Promise<OptionChainSnapshot> {
    const headers = { 'X-Finnhub-Token': this.credential('apiKey') };
    const url = this.url('/api/v1/stock/option-chain', { symbol: this.toVenueSymbol(symbol) });
    const { data: chain, res } = await this.getJson('optionChain', url, FinnhubOptionChain, { headers, signal: options.signal });
    if (chain.code !== undefined && chain.code !== '' && chain.code !== symbol) {
      throw new MalformedPayloadError(this.venue, `optionChain answered for ${chain.code}, not ${symbol}`, res.body.toString('utf8'));
    }
    const contracts: OptionContract[] = [];
    for (const expiration of chain.data ?? []) {
      for (const c of [...(expiration.options.CALL ?? []), ...(expiration.options.PUT ?? [])]) {
        contracts.push(this.toContract(symbol, c, chain.lastTradeDate, res.receivedAtMs));
      }
    }
    return { symbol, contracts, envelopes: contracts.map((c) => optionContractEnvelope(c, res.receivedAtMs)) };
  }

  /** Each request keeps its unit's slot `slotHoldMs` after its answer, failed or not: the per-second spacing. */
  protected override async send(req: HttpRequest): Promise<HttpResponse> {
    try {
      return await super.send(req);
    } finally {
      await sleep(this.slotHoldMs);
    }
  }

  private toContract(symbol: string, c: FinnhubOptionContract, lastTradeDate: string | undefined, receivedAtMs: number): OptionContract {
    const dec = (v: number | null | undefined): string | null => (v === null || v === undefined ? null : decimalString(v));
    const count = (v: number | null | undefined): number | null => (v === null || v === undefined || v < 0 ? null : Math.round(v));
    // The snapshot a quote belongs to: its update time; without one, the chain's last trading day
    // (the same day fetched again is the same snapshot), and only failing both, the receive time.
    const quoteTimeMs =
      (c.updatedAt ? newYorkLocalMs(c.updatedAt) : undefined) ?? (lastTradeDate ? Date.parse(`${lastTradeDate}T00:00:00Z`) : undefined) ?? receivedAtMs;
    return {
      venue: this.venue,
      symbol,
      contract: c.contractName,
      side: c.type === 'CALL' ? 'call' : 'put',
      expiration: c.expirationDate,
      strike: decimalString(c.strike),
      quoteTimeMs,
      bid: dec(c.bid),
      ask: dec(c.ask),
      last: dec(c.lastPrice),
      volume: count(c.volume),
      openInterest: count(c.openInterest),
      impliedVolatility: dec(c.impliedVolatility),
      delta: dec(c.delta),
      gamma: dec(c.gamma),
      theta: dec(c.theta),
      vega: dec(c.vega),
      rho: dec(c.rho),
    };
  }
}

/**
 * The budget correction from Finnhub's headers: used = `X-Ratelimit-Limit - X-Ratelimit-Remaining`
 * in the window that ends at `X-Ratelimit-Reset` (epoch seconds) and began `windowMs` (a minute) earlier.
 */
export function rateLimitUsage(
  headers: ResponseHeaders,
  windowMs: number = FINNHUB_DEFAULTS.rateLimitWindowMs,
): { usedWeight: number; windowStartMs: number } | undefined {
  const limit = Number(headers.get('x-ratelimit-limit'));
  const remaining = Number(headers.get('x-ratelimit-remaining'));
  const reset = Number(headers.get('x-ratelimit-reset'));
  if (!Number.isSafeInteger(limit) || !Number.isSafeInteger(remaining) || !Number.isSafeInteger(reset) || limit <= 0 || remaining < 0 || reset <= 0) {
    return undefined;
  }
  return { usedWeight: Math.max(0, limit - remaining), windowStartMs: reset * 1000 - windowMs };
}

/** `YYYY-MM-DD HH:mm:ss` read as America/New_York wall time (Finnhub's exchange time), to epoch ms. */
export function newYorkLocalMs(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text);
  if (!m) return undefined;
  const asUtc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  if (!Number.isFinite(asUtc)) return undefined;
  // The zone's offset at a guess, then at the corrected instant (the two differ only across a DST change).
  let ms = asUtc - offsetMs(asUtc);
  ms = asUtc - offsetMs(ms);
  return ms;
}

function offsetMs(instant: number): number {
  const p = Object.fromEntries(NY_PARTS.formatToParts(new Date(instant)).map((x) => [x.type, x.value])) as Record<string, string>;
  const wall = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return wall - Math.floor(instant / 1000) * 1000;
}
