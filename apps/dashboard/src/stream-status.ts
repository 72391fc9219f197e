import { jobId, type Gap, type StreamDefinition } from '@tickfleet/core';
import type { RedisClient } from '@tickfleet/queues';
import { readStreamLive, StreamLeases, type StreamHolder, type StreamLiveState } from '@tickfleet/streams';

/** Where the streams' runtime state lives: the fleet's Redis under its key prefix (leases and published live states). */
export interface StreamStatusSource {
  redis: RedisClient;
  prefix: string;
}

/** An unhealed trade-id range on the gap ledger: trade ids `[fromId, toId)` of one instrument. */
export interface StreamGapEntry {
  symbol: string;
  /** The ledger's job id (`tickfleet gaps list <jobId>` lists them). */
  jobId: string;
  fromId: number;
  toId: number;
  detectedAt: number;
}

/** Most ledger entries listed per stream (the newest); `unhealedGaps` counts them all. */
const STREAM_GAP_ENTRIES_MAX = 20;

/** One stream definition with its holder and the live state the holder last published. */
export interface StreamStatus extends Omit<StreamDefinition, 'symbols'> {
  /** The definition's pairs, counted (a stream may have up to 1024; `tickfleet streams show` lists them). */
  symbolCount: number;
  /** Its lease in Redis now; null while no worker holds it. */
  holder: StreamHolder | null;
  /** What the holder published lately; null when nobody did within the live key's TTL. */
  live: StreamLiveState | null;
  /** Open `trade-ids` gap ledger entries of the stream's instruments: trades no holder could heal. */
  unhealedGaps: number;
  /** The newest of them, at most {@link STREAM_GAP_ENTRIES_MAX}. */
  gaps: StreamGapEntry[];
}

/**
 * Every stream definition in the store with its holder (`StreamLeases.holders()`), its published
 * live state and its open trade-id ledger entries, ordered by name: what `tickfleet status` and
 * the dashboard show. `openGaps` are the store's open gaps when the caller has them already.
 */
export async function collectStreamStatus(streams: readonly StreamDefinition[], openGaps: readonly Gap[], source: StreamStatusSource): Promise<StreamStatus[]> {
  if (streams.length === 0) return [];
  const names = streams.map((s) => s.name);
  const [holders, live] = await Promise.all([
    // Only `holders()` is used: it reads the lease hash and joins no cycle, so the id is a label.
    new StreamLeases(source.redis, 'status-reader', { prefix: source.prefix }).holders(),
    readStreamLive(source.redis, source.prefix, names),
  ]);
  const tradeGaps = new Map<string, Gap[]>();
  for (const gap of openGaps) {
    if (gap.kind !== 'trade-ids') continue;
    const list = tradeGaps.get(gap.jobId) ?? [];
    list.push(gap);
    tradeGaps.set(gap.jobId, list);
  }
  return streams.map((def) => {
    const { symbols, ...rest } = def;
    // The ledger key of a stream symbol's unhealed trades is the instrument's trades job id (see @tickfleet/streams' stream-events.ts).
    const gaps = symbols.flatMap((symbol) =>
      (tradeGaps.get(jobId({ venue: def.venue, symbol, type: 'trades' })) ?? []).map((g) => ({
        symbol,
        jobId: g.jobId,
        fromId: g.fromMs,
        toId: g.toMs,
        detectedAt: g.detectedAt,
      })),
    );
    gaps.sort((a, b) => b.detectedAt - a.detectedAt || a.symbol.localeCompare(b.symbol) || a.fromId - b.fromId);
    return {
      ...rest,
      symbolCount: symbols.length,
      holder: holders.get(def.name) ?? null,
      live: live.get(def.name) ?? null,
      unhealedGaps: gaps.length,
      gaps: gaps.slice(0, STREAM_GAP_ENTRIES_MAX),
    };
  });
}
