import { createHash } from 'node:crypto';
import { z } from 'zod';
import { VenueName } from './names.js';

export const CHANNELS = ['candles', 'trades', 'book', 'files', 'series', 'options', 'markets', 'poll_stats', 'poll_errors', 'stream_events'] as const;
export const Channel = z.enum(CHANNELS);
export type Channel = z.infer<typeof Channel>;

/** Envelope v1: one persisted record and where it came from. */
export const Envelope = z.object({
  v: z.literal(1).default(1),
  messageId: z.string().min(1).optional(),
  sequence: z.number().int().nonnegative().optional(),
  venue: VenueName,
  channel: Channel,
  symbol: z.string().min(1),
  serverTimeMs: z.number().int().optional(),
  receivedAtMs: z.number().int(),
  payload: z.record(z.string(), z.unknown()),
});
export type Envelope = z.infer<typeof Envelope>;

/**
 * Dedup key, by priority: `mid:<messageId>`, else `seq:<venue>:<channel>:<sequence>`,
 * else `hash:<16 hex of sha256 over the canonical payload>`.
 */
export function dedupKey(env: Pick<Envelope, 'messageId' | 'sequence' | 'venue' | 'channel' | 'symbol' | 'payload'>): string {
  if (env.messageId !== undefined) return `mid:${env.messageId}`;
  if (env.sequence !== undefined) return `seq:${env.venue}:${env.channel}:${env.sequence}`;
  return `hash:${stableHash({ venue: env.venue, channel: env.channel, symbol: env.symbol, payload: env.payload })}`;
}

/** 16 hex chars of sha256 over a canonical JSON form (object keys sorted), so equal values hash equally. */
export function stableHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16);
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}
