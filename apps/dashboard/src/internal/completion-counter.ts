import type { RedisClient, VenueQueues } from '@tickfleet/queues';

/** Counters of one venue since the dashboard first looked at it. */
export interface CompletionTotals {
  /** Units that completed (every kind: live, backfill, book poll). */
  units: number;
  /** Records those units wrote, from each unit's return value (`{ records }`, what the worker returns). */
  records: number;
}

interface VenueState {
  /** Completion times (scores) above `watermark - slackMs` were read; older ones are never read again. */
  watermark: number;
  /** Units already counted whose score is within the slack, so a second read does not count them twice. */
  seen: Map<string, number>;
  totals: CompletionTotals;
}

/**
 * Counts each venue's completed units and the records they wrote, by reading the queue's
 * completed set (BullMQ scores it by completion time) from where the previous read stopped.
 *
 * The queue's `completed` count cannot serve as a counter: finished units are trimmed (at most
 * 1000 per venue, for an hour), so under steady work the count stays flat while units complete.
 * The set is read from `slackMs` before the newest completion time already seen, because the
 * score is the completing worker's clock: a worker whose clock is behind another's adds a unit
 * with an older score after the newer one was read; the units within the slack are remembered
 * by id and counted once. Units that complete and are trimmed between two reads (more than 1000
 * per venue in one sampling interval) are missed.
 *
 * The first read of a venue only sets the starting point: units completed before the dashboard
 * looked are not counted.
 */
export class CompletionCounter {
  private readonly venues = new Map<string, VenueState>();

  constructor(
    private readonly redis: RedisClient,
    private readonly queues: VenueQueues,
    private readonly slackMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The venue's totals after counting what completed since the previous read. */
  async read(venue: string): Promise<CompletionTotals> {
    const queue = this.queues.queue(venue);
    const readAt = this.now();
    let state = this.venues.get(venue);
    const primed = state !== undefined;
    state ??= { watermark: readAt, seen: new Map(), totals: { units: 0, records: 0 } };
    const raw = await this.redis.zrangebyscore(queue.keys.completed!, state.watermark - this.slackMs, '+inf', 'WITHSCORES');
    const fresh: Array<{ id: string; score: number }> = [];
    let newest = state.watermark;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const id = raw[i]!;
      const score = Number(raw[i + 1]);
      newest = Math.max(newest, score);
      // A unit retried from the board completes again under the same id with a new score: it ran again.
      if (state.seen.get(id) === score) continue;
      state.seen.set(id, score);
      fresh.push({ id, score });
    }
    if (primed && fresh.length > 0) {
      state.totals.units += fresh.length;
      state.totals.records += await this.recordsOf(
        venue,
        fresh.map((f) => f.id),
      );
    }
    state.watermark = Math.max(newest, readAt);
    for (const [id, score] of state.seen) if (score < state.watermark - this.slackMs) state.seen.delete(id);
    this.venues.set(venue, state);
    return { ...state.totals };
  }

  /** Sum of `records` in the return values of `ids` (a unit trimmed meanwhile counts 0 records). */
  private async recordsOf(venue: string, ids: readonly string[]): Promise<number> {
    const queue = this.queues.queue(venue);
    // One slot: every key of a venue queue carries the venue's hash tag.
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hget(queue.toKey(id), 'returnvalue');
    const replies = (await pipeline.exec()) ?? [];
    let records = 0;
    for (const [err, value] of replies) {
      if (err || typeof value !== 'string') continue;
      records += recordsIn(value);
    }
    return records;
  }
}

function recordsIn(returnValue: string): number {
  try {
    const parsed: unknown = JSON.parse(returnValue);
    if (parsed && typeof parsed === 'object' && 'records' in parsed) {
      const n = (parsed as { records: unknown }).records;
      if (typeof n === 'number' && Number.isFinite(n) && n > 0) return n;
    }
  } catch {
    // Not a worker's return value (a unit completed by something else): no records.
  }
  return 0;
}
