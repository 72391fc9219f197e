export interface BackoffOptions {
  /** Delay scale of the first retry. @defaultValue 1000 */
  baseMs?: number;
  /** Upper bound of any delay. @defaultValue 60000 */
  capMs?: number;
  /** Uniform random source in [0, 1). @defaultValue Math.random */
  random?: () => number;
}

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and
 * Jitter"): a uniform delay in [0, min(cap, base * 2^attempt)). Full jitter spreads retries of
 * many workers that failed together, which equal-delay backoff would re-synchronise.
 * `attempt` counts from 0.
 */
export function backoffMs(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 1000;
  const cap = options.capMs ?? 60_000;
  const random = options.random ?? Math.random;
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, Math.min(attempt, 52)));
  return Math.floor(random() * ceiling);
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The time a venue asked us to wait until, from its response headers, or undefined when it gave
 * none: `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3), else `retry-after-ms`,
 * else an `x-ratelimit-reset` given as epoch seconds or ms.
 */
export function retryAtFromHeaders(headers: HeaderBag, nowMs: number): number | undefined {
  const retryAfter = header(headers, 'retry-after')?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return nowMs + Math.ceil(Number(retryAfter) * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(nowMs, date);
  }
  const retryAfterMs = header(headers, 'retry-after-ms')?.trim();
  if (retryAfterMs && /^\d+(\.\d+)?$/.test(retryAfterMs)) return nowMs + Math.ceil(Number(retryAfterMs));
  const reset = header(headers, 'x-ratelimit-reset')?.trim();
  if (reset && /^\d+(\.\d+)?$/.test(reset)) {
    const v = Number(reset);
    // Epoch seconds are ~1.7e9, epoch ms ~1.7e12; smaller values are delays in seconds.
    if (v > 1e11) return Math.max(nowMs, Math.ceil(v));
    if (v > 1e8) return Math.max(nowMs, Math.ceil(v * 1000));
    return nowMs + Math.ceil(v * 1000);
  }
  return undefined;
}
