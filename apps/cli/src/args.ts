import { ISO_DATE_EXPECTED, parseDurationMs, parseIsoInstant, ValidationError } from '@tickfleet/core';

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
