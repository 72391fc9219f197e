import { ValidationError } from '@tickfleet/core';

/** An integer adapter option within [min, max], or its default; a bad value fails naming the option. */
export function intOption(name: string, value: number | undefined, defaultValue: number, min: number, max: number): number {
  if (value === undefined) return defaultValue;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new ValidationError(name, `an integer from ${min} to ${max}`, value);
  return value;
}

/** Longest wait or limit window an adapter option may name: a day. */
const MAX_DURATION_MS = 86_400_000;

/** A duration option in ms from `min` to a day, or its default. */
export function durationOption(name: string, value: number | undefined, defaultValue: number, min = 1): number {
  return intOption(name, value, defaultValue, min, MAX_DURATION_MS);
}

/** Strips trailing slashes so `${baseUrl}/path` never doubles them; rejects non-http(s) URLs. */
export function normaliseBaseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError(name, 'an http(s) URL', value);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError(name, 'an http(s) URL', value);
  return value.replace(/\/+$/, '');
}

/** Sleeps `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
