import { z } from 'zod';
import { ValidationError } from './errors/validation-error.js';
import { parseOrThrow } from './parse.js';

/** Venues tickfleet can collect over a WebSocket; a stream of any other venue is refused naming these. */
export const STREAM_VENUES = ['binance', 'kraken'] as const;
export type StreamVenue = (typeof STREAM_VENUES)[number];

/** What a stream carries per symbol: executed trades, and order-book diffs kept as a local book. */
export const STREAM_CHANNELS = ['trades', 'book'] as const;
export type StreamChannel = (typeof STREAM_CHANNELS)[number];

/**
 * Binance spot: "A single connection can listen to a maximum of 1024 streams", and every
 * (symbol, channel) pair is one stream (`btcusdt@trade`, `btcusdt@depth`), so a stream with both
 * channels holds at most 512 symbols.
 */
export const BINANCE_STREAMS_PER_CONNECTION = 1024;

/**
 * Kraken WebSocket v2 documents no cap on the symbols of one connection; this one is ours. Every
 * book update is checked against Kraken's CRC32 over the top levels in the worker holding the
 * stream, and a resync re-subscribes every symbol of the connection, so 100 symbols keeps one
 * worker's share and one resync small. Larger sets are several streams, which the fleet spreads
 * over workers.
 */
export const KRAKEN_MAX_STREAM_SYMBOLS = 100;

/** Binance `GET /api/v3/depth` takes `limit` up to 5000 (the local-book snapshot); we ask for at least 5 levels. */
export const BINANCE_BOOK_DEPTH = { min: 5, max: 5000 } as const;

/** Kraken v2 `book` subscriptions take one of these depths (levels per side). */
export const KRAKEN_STREAM_BOOK_DEPTHS = [10, 25, 100, 500, 1000] as const;

/**
 * Depth a book stream uses when the definition names none: Kraken's own default (10), and for
 * Binance a 1000-level snapshot (request weight 50; 5000 levels weigh 250).
 */
export const DEFAULT_STREAM_BOOK_DEPTH: Readonly<Record<StreamVenue, number>> = { binance: 1000, kraken: 10 };

/** A stream's name: lowercase, starts with a letter, e.g. `btc-majors`; unique across venues. */
export const StreamName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'expected a stream name: 1-64 of [a-z0-9_-], starting with a letter (e.g. btc-majors)');

/**
 * A stream symbol in tickfleet's pair form, `BASE/QUOTE` in upper case (`BTC/USDT`); the venue
 * sessions derive the venue's form from it (Binance `btcusdt`, Kraken v2 `BTC/USD`).
 */
const PAIR = /^[A-Z0-9]{1,20}\/[A-Z0-9]{1,20}$/;

/**
 * A stream: one long-lived venue connection serving a set of symbols and channels, held by one
 * worker at a time. `version` counts the changes of this name's definitions: 1 when created, and a
 * name added again after its removal goes on from where the removed stream's ended.
 */
export interface StreamDefinition {
  name: string;
  venue: StreamVenue;
  /** Distinct pairs in the order given. */
  symbols: string[];
  /** Distinct channels in {@link STREAM_CHANNELS} order. */
  channels: StreamChannel[];
  /** Levels of the book (snapshot limit on Binance, subscription depth on Kraken); null without the book channel. */
  bookDepth: number | null;
  enabled: boolean;
  version: number;
  createdAt: number;
  updatedAt: number;
}

/** What an operator gives to create or replace a stream; `channels` default to trades, `enabled` to true on create. */
export interface StreamInput {
  name: string;
  venue: string;
  symbols: readonly string[];
  channels?: readonly string[];
  bookDepth?: number | null;
  enabled?: boolean;
}

/** A validated stream definition without its bookkeeping fields. */
export type StreamSpec = Pick<StreamDefinition, 'name' | 'venue' | 'symbols' | 'channels' | 'bookDepth'> & { enabled?: boolean };

/** Most symbols a stream of `venue` with `channelCount` channels may hold. */
export function maxStreamSymbols(venue: StreamVenue, channelCount: number): number {
  return venue === 'binance' ? Math.floor(BINANCE_STREAMS_PER_CONNECTION / Math.max(1, channelCount)) : KRAKEN_MAX_STREAM_SYMBOLS;
}

export function isStreamVenue(venue: string): venue is StreamVenue {
  return (STREAM_VENUES as readonly string[]).includes(venue);
}

/**
 * Validates and normalises a stream definition: a known name, a streaming venue, 1..N distinct
 * pairs (trimmed and upper-cased, duplicates dropped), distinct channels, a book depth the venue
 * accepts (defaulted when the book channel is on). Throws a ValidationError naming the first bad
 * field, with the venue's bound where one applies.
 */
export function parseStreamInput(input: StreamInput): StreamSpec {
  const name = parseOrThrow(StreamName, input.name, 'stream name');
  if (!isStreamVenue(input.venue)) throw new ValidationError('venue', `a venue with streams (${STREAM_VENUES.join(', ')})`, input.venue);
  const venue = input.venue;
  const channels = parseChannels(input.channels ?? ['trades']);
  const symbols = parseStreamSymbols(input.symbols);
  const max = maxStreamSymbols(venue, channels.length);
  if (symbols.length > max) {
    const why =
      venue === 'binance'
        ? `Binance serves ${BINANCE_STREAMS_PER_CONNECTION} streams per connection, one per symbol and channel`
        : "tickfleet's cap per Kraken connection";
    throw new ValidationError(
      'symbols',
      `at most ${max} distinct symbols for a ${venue} stream with ${channels.join('+')} (${why})`,
      `${symbols.length} symbols`,
    );
  }
  const bookDepth = parseBookDepth(venue, channels, input.bookDepth ?? null);
  return { name, venue, symbols, channels, bookDepth, ...(input.enabled !== undefined ? { enabled: input.enabled } : {}) };
}

function parseChannels(raw: readonly string[]): StreamChannel[] {
  const given = new Set<string>();
  raw.forEach((c, i) => {
    const channel = c.trim();
    if (!(STREAM_CHANNELS as readonly string[]).includes(channel)) throw new ValidationError(`channels[${i}]`, `one of ${STREAM_CHANNELS.join(', ')}`, c);
    given.add(channel);
  });
  if (given.size === 0) throw new ValidationError('channels', `at least one of ${STREAM_CHANNELS.join(', ')}`);
  return STREAM_CHANNELS.filter((c) => given.has(c));
}

function parseStreamSymbols(raw: readonly string[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  raw.forEach((r, i) => {
    const s = r.trim().toUpperCase();
    if (!PAIR.test(s)) throw new ValidationError(`symbols[${i}]`, 'a pair such as BTC/USDT (BASE/QUOTE, letters and digits)', r);
    if (!seen.has(s)) {
      seen.add(s);
      out.push(s);
    }
  });
  if (out.length === 0) throw new ValidationError('symbols', 'at least one symbol such as BTC/USDT');
  return out;
}

function parseBookDepth(venue: StreamVenue, channels: readonly StreamChannel[], depth: number | null): number | null {
  if (!channels.includes('book')) {
    if (depth !== null) throw new ValidationError('bookDepth', 'no book depth for a stream without the book channel', depth);
    return null;
  }
  if (depth === null) return DEFAULT_STREAM_BOOK_DEPTH[venue];
  if (venue === 'kraken') {
    if (!(KRAKEN_STREAM_BOOK_DEPTHS as readonly number[]).includes(depth))
      throw new ValidationError('bookDepth', `one of ${KRAKEN_STREAM_BOOK_DEPTHS.join(', ')} for kraken`, depth);
  } else if (!Number.isSafeInteger(depth) || depth < BINANCE_BOOK_DEPTH.min || depth > BINANCE_BOOK_DEPTH.max) {
    throw new ValidationError('bookDepth', `an integer in ${BINANCE_BOOK_DEPTH.min}..${BINANCE_BOOK_DEPTH.max} for binance`, depth);
  }
  return depth;
}

/** Whether two definitions describe the same stream (what a change of `version` means). */
export function sameStreamSpec(a: StreamSpec, b: StreamSpec): boolean {
  return (
    a.venue === b.venue &&
    a.bookDepth === b.bookDepth &&
    a.symbols.length === b.symbols.length &&
    a.symbols.every((s, i) => s === b.symbols[i]) &&
    a.channels.length === b.channels.length &&
    a.channels.every((c, i) => c === b.channels[i])
  );
}
