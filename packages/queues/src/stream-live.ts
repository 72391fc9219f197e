import { assertPrefix } from './names.js';
import type { RedisClient } from './redis-connection.js';

/**
 * `<prefix>:stream:{<name>}:live`: a held stream's runtime state as its holder last published it
 * (JSON, written every stats cycle with a TTL of a few cycles, so a dead holder's state vanishes).
 */
export function streamLiveKey(prefix: string, name: string): string {
  return `${assertPrefix(prefix)}:stream:{${name}}:live`;
}

/** The published live state of each named stream (parsed JSON), or null where no holder published one lately. */
export async function readStreamLive(redis: RedisClient, prefix: string, names: readonly string[]): Promise<Map<string, Record<string, unknown> | null>> {
  // One GET per stream: the keys sit in different Cluster slots (one hash tag per stream).
  const values = await Promise.all(names.map((name) => redis.get(streamLiveKey(prefix, name))));
  return new Map(names.map((name, i) => [name, parseLive(values[i] ?? null)]));
}

function parseLive(raw: string | null): Record<string, unknown> | null {
  if (raw === null) return null;
  try {
    const v = JSON.parse(raw) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
