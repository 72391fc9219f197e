import { formatDurationMs, ISO_DATE_EXPECTED, parseDurationMs, parseIsoInstant, ValidationError, WORKER_LIVENESS_MS } from '@tickfleet/core';

/** Argument parsers for commander: each throws a ValidationError naming the argument and what was expected. */

export function positiveInt(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n <= 0) throw new ValidationError(name, 'a positive integer', value);
    return n;
  };
}

export function integer(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new ValidationError(name, 'an integer', value);
    return n;
  };
}

export function fraction(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0 || n > 1) throw new ValidationError(name, 'a number in (0, 1]', value);
    return n;
  };
}

export function duration(name: string): (value: string) => number {
  return (value) => {
    const ms = parseDurationMs(value);
    if (ms === undefined || ms <= 0) throw new ValidationError(name, 'a positive duration such as 500ms, 10s, 1m, 1h', value);
    return ms;
  };
}

/**
 * ISO-8601 date or date-time (`2024-01-01`, `2024-01-01T12:00:00Z`) to epoch ms, UTC when no zone
 * is given; dates that do not exist (`2024-02-30`) and dates before 1990 are refused.
 */
export function isoDate(name: string): (value: string) => number {
  return (value) => {
    const ms = parseIsoInstant(value);
    if (ms === undefined) throw new ValidationError(name, ISO_DATE_EXPECTED, value);
    return ms;
  };
}

export function httpUrl(name: string): (value: string) => string {
  return (value) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ValidationError(name, 'an http(s) URL such as https://api.binance.com', value);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ValidationError(name, 'an http(s) URL such as https://api.binance.com', value);
    }
    return value.replace(/\/+$/, '');
  };
}

export function oneOf<T extends string>(name: string, allowed: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(allowed as readonly string[]).includes(value)) throw new ValidationError(name, `one of ${allowed.join(', ')}`, value);
    return value as T;
  };
}

/** The `--aimd` keys and the AimdSettings field each sets. */
const AIMD_KEYS = {
  min: 'min',
  max: 'max',
  interval: 'increaseAfterMs',
  stable: 'stableMs',
  'max-failure-ratio': 'maxFailureRatio',
  'p95-low': 'lowP95LatencyMs',
  'p95-high': 'maxP95LatencyMs',
  start: 'start',
  'restart-after': 'restartAfterMs',
} as const;
type AimdKey = keyof typeof AIMD_KEYS;
export type AimdPatch = Partial<Record<(typeof AIMD_KEYS)[AimdKey], number | string>>;

/**
 * `--aimd min=1,max=8,stable=30s,p95-low=2s,start=floor,…`: the AIMD settings to change, each
 * checked here (counts positive integers, durations as 500ms/10s/1m, the ratio in [0, 1],
 * start floor|ceiling); the connector schema then checks them together (p95-low <= p95-high).
 */
export function aimdSettings(name: string): (value: string, previous?: AimdPatch) => AimdPatch {
  const expected = `comma-separated key=value pairs with keys ${Object.keys(AIMD_KEYS).join(', ')} (e.g. min=1,max=8,stable=30s,start=floor)`;
  return (value, previous = {}) => {
    const out: AimdPatch = { ...previous };
    for (const pair of value.split(',')) {
      const eq = pair.indexOf('=');
      const key = pair.slice(0, eq).trim() as AimdKey;
      const raw = pair.slice(eq + 1).trim();
      if (eq <= 0 || !(key in AIMD_KEYS)) throw new ValidationError(name, expected, pair);
      const field = AIMD_KEYS[key];
      const what = `${name} ${key}`;
      if (key === 'min' || key === 'max') out[field] = positiveInt(what)(raw);
      else if (key === 'max-failure-ratio') {
        const n = Number(raw);
        if (raw === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new ValidationError(what, 'a number in [0, 1]', raw);
        out[field] = n;
      } else if (key === 'start') out[field] = oneOf(what, ['floor', 'ceiling'] as const)(raw);
      else if (key === 'stable') {
        const ms = raw === '0' ? 0 : parseDurationMs(raw);
        if (ms === undefined || ms < 0) throw new ValidationError(what, 'a duration such as 30s or 1m (0 to turn it off)', raw);
        out[field] = ms;
      } else if (key === 'restart-after') {
        const ms = raw === '0' ? 0 : parseDurationMs(raw);
        if (ms === undefined || ms < 0 || (ms > 0 && ms < WORKER_LIVENESS_MS)) {
          const min = formatDurationMs(WORKER_LIVENESS_MS);
          throw new ValidationError(what, `0 (never) or a duration of at least ${min} (the workers' liveness window), such as 60s`, raw);
        }
        out[field] = ms;
      } else out[field] = duration(what)(raw);
    }
    return out;
  };
}
