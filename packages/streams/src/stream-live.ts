import { z } from 'zod';
import { assertPrefix, type RedisClient } from '@tickfleet/queues';

/**
 * `<prefix>:stream:{<name>}:live`: a held stream's runtime state as its holder last published it
 * (JSON, written every stats cycle with a TTL of a few cycles, so a dead holder's state vanishes).
 */
export function streamLiveKey(prefix: string, name: string): string {
  return `${assertPrefix(prefix)}:stream:{${name}}:live`;
}

/**
 * What a holder publishes about one held stream (the worker's `/healthz` entry): the contract
 * between the worker that writes it and the readers (`tickfleet status`, the dashboard).
 */
export interface StreamLiveState {
  name: string;
  venue: string;
  /** The holder's worker id and lease token when it published. */
  worker: string;
  token: number;
  /** The session's connection state (`connecting`, `live`, `resyncing`, `backoff`, `stopped`). */
  state: string;
  /** ISO time the current connection opened; null while not connected. */
  connectedSince: string | null;
  messages: number;
  reconnects: number;
  gapsFound: number;
  gapsHealed: number;
  gapsUnhealed: number;
  resyncs: number;
  checksumMismatches: number;
  garbledFrames: number;
  /** Age of the last message when the holder published (add `now - updatedAt` for its age now); null before the first. */
  lastMessageAgeMs: number | null;
  recordsDelivered: number;
  stored: number;
  duplicates: number;
  timeQuality: { skewP50Ms: number | null; skewP99Ms: number | null; outOfOrder: number };
  /** Holder's clock when it published (epoch ms). */
  updatedAt: number;
}

const count = z.number().int().nonnegative();
// Loose: a newer worker may publish more fields than this reader knows; they pass through.
const LiveState = z.looseObject({
  name: z.string(),
  venue: z.string(),
  worker: z.string(),
  token: z.number(),
  state: z.string(),
  connectedSince: z.string().nullable(),
  messages: count,
  reconnects: count,
  gapsFound: count,
  gapsHealed: count,
  gapsUnhealed: count,
  resyncs: count,
  checksumMismatches: count,
  garbledFrames: count,
  lastMessageAgeMs: z.number().nullable(),
  recordsDelivered: count,
  stored: count,
  duplicates: count,
  timeQuality: z.looseObject({ skewP50Ms: z.number().nullable(), skewP99Ms: z.number().nullable(), outOfOrder: count }),
  updatedAt: z.number(),
});

/** Publishes a held stream's live state for `ttlMs` (the holder calls it every stats cycle; past the TTL the state vanishes). */
export async function publishStreamLive(redis: RedisClient, prefix: string, state: StreamLiveState, ttlMs: number): Promise<void> {
  await redis.set(streamLiveKey(prefix, state.name), JSON.stringify(state), 'PX', ttlMs);
}

/**
 * The published live state of each named stream, or null where no holder published one lately
 * (or what is there is not a live state: a reader never fails a whole page over one bad key).
 */
export async function readStreamLive(redis: RedisClient, prefix: string, names: readonly string[]): Promise<Map<string, StreamLiveState | null>> {
  // One GET per stream: the keys sit in different Cluster slots (one hash tag per stream).
  const values = await Promise.all(names.map((name) => redis.get(streamLiveKey(prefix, name))));
  return new Map(names.map((name, i) => [name, parseLive(values[i] ?? null)]));
}

function parseLive(raw: string | null): StreamLiveState | null {
  if (raw === null) return null;
  try {
    const parsed = LiveState.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
