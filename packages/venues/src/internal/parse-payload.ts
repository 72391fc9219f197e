import { MalformedPayloadError } from '@tickfleet/core';
import type { z } from 'zod';

/**
 * Parses a response body as JSON and validates it with `schema`. Bad JSON or a wrong shape become a
 * MalformedPayloadError naming the first offending path and carrying a truncated sample of the body.
 * `conforms`, for large hot payloads, is a hand-written check of exactly the schema's constraints:
 * when it accepts, the value is returned as is; when it refuses, the schema runs for the error.
 */
export function parsePayload<S extends z.ZodType>(
  venue: string,
  endpoint: string,
  body: Buffer | string,
  schema: S,
  conforms?: (value: unknown) => value is z.infer<S>,
): z.infer<S> {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MalformedPayloadError(venue, `${endpoint} response is not JSON`, text, { cause: err });
  }
  if (conforms?.(value)) return value;
  return validatePayload(venue, endpoint, value, schema, text);
}

/** Validates an already parsed value; `sampleSource` is what the error's sample is cut from. */
export function validatePayload<S extends z.ZodType>(venue: string, endpoint: string, value: unknown, schema: S, sampleSource?: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  throw new MalformedPayloadError(venue, `${endpoint} response has an unexpected shape${where}: ${issue?.message ?? 'invalid'}`, sampleSource ?? value, {
    cause: result.error,
  });
}

/** A decimal number as venues send prices and sizes: string or number in, canonical decimal string out. */
export function decimalString(value: string | number): string {
  if (typeof value === 'string') return value;
  const text = String(value);
  // String(1e-7) is "1e-7"; stored prices stay plain decimals.
  return /e/i.test(text) ? value.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 }) : text;
}

/** A decimal as a string, as Binance and Polymarket send prices and sizes. */
export const DECIMAL_RE = /^-?\d+(\.\d+)?$/;
