import { priceAt } from '../data/candles.js';
import { roundTo, unitFloat } from '../data/random.js';

const DAY_MS = 86_400_000;
/** How often the emulated quotes change: every contract's `updatedAt` is the start of the current minute. */
export const FINNHUB_QUOTE_PERIOD_MS = 60_000;
/** Expirations per chain (the next Fridays) and strikes per expiration, kept small so tests store chains quickly. */
export const FINNHUB_EXPIRATIONS = 2;
export const FINNHUB_STRIKES = 3;

/** `YYYY-MM-DD HH:mm:ss` in America/New_York, the form of Finnhub's `updatedAt` and `lastTradeDateTime`. */
export function newYorkDateTime(ms: number): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: 'America/New_York',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The next `count` Fridays after the UTC day of `nowMs`, as epoch ms of their UTC midnight. */
function nextFridays(nowMs: number, count: number): number[] {
  const day = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const out: number[] = [];
  for (let d = day + DAY_MS; out.length < count; d += DAY_MS) if (new Date(d).getUTCDay() === 5) out.push(d);
  return out;
}

function strikeStep(price: number): number {
  return price >= 500 ? 10 : price >= 100 ? 5 : price >= 20 ? 1 : price >= 5 ? 0.5 : 0.1;
}

/** OCC contract symbol: root, expiry `YYMMDD`, `C`/`P`, strike × 1000 in 8 digits. */
function occName(symbol: string, expiryMs: number, side: 'C' | 'P', strike: number): string {
  const d = isoDate(expiryMs);
  return `${symbol}${d.slice(2, 4)}${d.slice(5, 7)}${d.slice(8, 10)}${side}${String(Math.round(strike * 1000)).padStart(8, '0')}`;
}

/**
 * The option chain Finnhub's `GET /api/v1/stock/option-chain?symbol=` returns, shaped as its
 * documentation's example: the underlier's last trade, then one entry per expiration with its
 * aggregates and `options.CALL` / `options.PUT` contract lists. Values are deterministic in
 * (seed, symbol, contract, quote minute), so two requests within one minute get the same body.
 */
export function finnhubOptionChain(symbol: string, nowMs: number, seed: number): Record<string, unknown> {
  const quoteMs = Math.floor(nowMs / FINNHUB_QUOTE_PERIOD_MS) * FINNHUB_QUOTE_PERIOD_MS;
  const spot = priceAt('finnhub', symbol, quoteMs, seed);
  const step = strikeStep(spot);
  const atm = Math.round(spot / step) * step;
  const updatedAt = newYorkDateTime(quoteMs);
  const data = nextFridays(nowMs, FINNHUB_EXPIRATIONS).map((expiryMs) => {
    const days = Math.max(1, Math.round((expiryMs - nowMs) / DAY_MS));
    const contracts = (side: 'C' | 'P'): Array<Record<string, unknown>> =>
      Array.from({ length: FINNHUB_STRIKES }, (_, i) => {
        const strike = roundTo(atm + (i - Math.floor(FINNHUB_STRIKES / 2)) * step, 2);
        const name = occName(symbol, expiryMs, side, strike);
        const r = (what: string): number => unitFloat(what, name, seed, quoteMs);
        const intrinsic = Math.max(0, side === 'C' ? spot - strike : strike - spot);
        const mid = roundTo(intrinsic + spot * 0.01 * Math.sqrt(days) * (0.5 + r('time')), 2);
        const half = roundTo(Math.max(0.01, mid * 0.02), 2);
        const iv = roundTo(15 + 40 * r('iv'), 4);
        const delta = roundTo(side === 'C' ? 0.2 + 0.6 * r('delta') : -0.2 - 0.6 * r('delta'), 4);
        return {
          contractName: name,
          contractSize: 'REGULAR',
          contractPeriod: 'WEEKLY',
          currency: 'USD',
          type: side === 'C' ? 'CALL' : 'PUT',
          inTheMoney: intrinsic > 0 ? 'TRUE' : 'FALSE',
          lastTradeDateTime: updatedAt,
          expirationDate: isoDate(expiryMs),
          strike,
          lastPrice: mid,
          bid: roundTo(Math.max(0, mid - half), 2),
          ask: roundTo(mid + half, 2),
          change: roundTo(mid * 0.05 * (r('change') - 0.5), 2),
          changePercent: roundTo(10 * (r('change') - 0.5), 4),
          volume: Math.floor(5000 * r('volume')),
          openInterest: Math.floor(20000 * r('oi')),
          impliedVolatility: iv,
          delta,
          gamma: roundTo(0.1 * r('gamma'), 4),
          theta: roundTo(-0.5 * r('theta'), 4),
          vega: roundTo(0.3 * r('vega'), 4),
          rho: roundTo((side === 'C' ? 0.1 : -0.1) * r('rho'), 4),
          theoretical: mid,
          intrinsicValue: roundTo(intrinsic, 2),
          timeValue: roundTo(mid - intrinsic, 2),
          updatedAt,
          daysBeforeExpiration: days,
        };
      });
    const calls = contracts('C');
    const puts = contracts('P');
    const sum = (list: Array<Record<string, unknown>>, key: string): number => list.reduce((n, c) => n + (c[key] as number), 0);
    const callVolume = sum(calls, 'volume');
    const putVolume = sum(puts, 'volume');
    const callOpenInterest = sum(calls, 'openInterest');
    const putOpenInterest = sum(puts, 'openInterest');
    return {
      expirationDate: isoDate(expiryMs),
      impliedVolatility: roundTo(sum([...calls, ...puts], 'impliedVolatility') / (calls.length + puts.length), 4),
      putVolume,
      callVolume,
      putCallVolumeRatio: callVolume === 0 ? 0 : roundTo(putVolume / callVolume, 4),
      putOpenInterest,
      callOpenInterest,
      putCallOpenInterestRatio: callOpenInterest === 0 ? 0 : roundTo(putOpenInterest / callOpenInterest, 4),
      optionsCount: calls.length + puts.length,
      options: { CALL: calls, PUT: puts },
    };
  });
  return { code: symbol, exchange: 'US', lastTradeDate: isoDate(quoteMs), lastTradePrice: roundTo(spot, 2), data };
}
