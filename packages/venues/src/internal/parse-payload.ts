import { StringDecoder } from 'node:string_decoder';
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
  let value: unknown;
  try {
    value = typeof body === 'string' ? JSON.parse(body) : parseJsonBuffer(body);
  } catch (err) {
    throw new MalformedPayloadError(venue, `${endpoint} response is not JSON`, bodyText(body), { cause: err });
  }
  if (conforms?.(value)) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw shapeError(venue, endpoint, result.error, bodyText(body));
}

/** Validates an already parsed value; `sampleSource` is what the error's sample is cut from. */
export function validatePayload<S extends z.ZodType>(venue: string, endpoint: string, value: unknown, schema: S, sampleSource?: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw shapeError(venue, endpoint, result.error, sampleSource ?? value);
}

function shapeError(venue: string, endpoint: string, error: z.ZodError, sample: unknown): MalformedPayloadError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  return new MalformedPayloadError(venue, `${endpoint} response has an unexpected shape${where}: ${issue?.message ?? 'invalid'}`, sample, { cause: error });
}

const bodyText = (body: Buffer | string): string => (typeof body === 'string' ? body : body.toString('utf8'));

/**
 * Pieces of a large JSON array body are parsed this long or a row longer. V8 puts a string of
 * more than about 128 KiB in its large-object space, a fresh mapping of its own: decoding a
 * 1,000-kline Binance page (169 KB) took about 0.85 ms on the project machine, against 10 µs for a
 * string of 120 KB, and the page's whole decode and parse 1.2-1.3 ms against 0.45-0.5 ms in pieces.
 */
const JSON_PIECE_BYTES = 64 * 1024;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const ROW_SEPARATORS = { [OPEN_BRACKET]: Buffer.from('],['), [OPEN_BRACE]: Buffer.from('},{') } as Record<number, Buffer>;

/**
 * `JSON.parse(body.toString('utf8'))`, with a large top-level array of arrays or objects (a klines
 * page) parsed in pieces of about {@link JSON_PIECE_BYTES}, each cut where one row ends and the next
 * begins (`],[` or `},{`), so no string gets large. A cut that fell inside a string or a nested
 * row makes one piece invalid JSON (an unterminated string, unbalanced brackets or text after the
 * value), so when every piece parses the rows are exactly the whole body's; when one does not, the
 * whole body is parsed as one string, for the same value or the same SyntaxError.
 * `pieceBytes` is for tests.
 */
export function parseJsonBuffer(body: Buffer, pieceBytes = JSON_PIECE_BYTES): unknown {
  const separator = body.length > pieceBytes && body[0] === OPEN_BRACKET ? ROW_SEPARATORS[body[1]!] : undefined;
  if (separator === undefined) return JSON.parse(body.toString('utf8'));
  const rows: unknown[] = [];
  try {
    for (let start = 0; ;) {
      const cut = start + pieceBytes < body.length ? body.indexOf(separator, start + pieceBytes) : -1;
      // A piece starts at the body's '[' or at a row's first byte, and ends at the body's end or a row's last.
      const open = start === 0 ? '' : '[';
      const piece = cut < 0 ? open + body.toString('utf8', start) : `${open}${body.toString('utf8', start, cut + 1)}]`;
      // Every piece is an array: it starts with '[' and, when valid JSON, ends with its ']'.
      for (const row of JSON.parse(piece) as unknown[]) rows.push(row);
      if (cut < 0) return rows;
      start = cut + 2;
    }
  } catch {
    return JSON.parse(body.toString('utf8'));
  }
}

/**
 * `body.toString('utf8')` decoded in pieces of {@link JSON_PIECE_BYTES} and joined: V8 keeps the join
 * as a rope of small strings, so no large string is made unless a reader indexes into the text.
 */
export function bodyString(body: Buffer): string {
  if (body.length <= JSON_PIECE_BYTES) return body.toString('utf8');
  const decoder = new StringDecoder('utf8'); // carries a character cut between two pieces
  let text = '';
  for (let start = 0; start < body.length; start += JSON_PIECE_BYTES) text += decoder.write(body.subarray(start, start + JSON_PIECE_BYTES));
  return text + decoder.end();
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
