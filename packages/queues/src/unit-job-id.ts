import { createHash } from 'node:crypto';
import { ValidationError } from '@tickfleet/core';
import type { QueuedUnit } from './queued-unit.js';

/**
 * BullMQ rejects custom ids containing `:` (it reserves them for repeat jobs) and ids that are
 * integers. tickfleet job ids use `:` as separator, so they are rewritten with `|`, which no venue,
 * symbol or timeframe may contain.
 */
function escapeId(id: string): string {
  return id.replaceAll(':', '|');
}

/**
 * Deterministic BullMQ job id of a unit, so adding the same unit twice (rescan, scheduler
 * restart, a second scheduler, an expired lease reclaimed) is a no-op in BullMQ:
 * - live units (incremental, book-poll, discovery, daily-files): `live|<jobId>|<dueAt>`, e.g.
 *   `live|binance|BTC/USDT|1m|ohlcv|1704067260000` — one unit per job per due time; option-chain
 *   units of a universe job add their round-robin slot, `live|finnhub|@megacaps|-|options|<dueAt>|<slot>`;
 * - backfill chunks: `bf|<backfillId>|<fromMs>-<toMs>` — one unit per chunk of the range;
 * - per-day units: `day|<venue>|<fromMs>|<hash of the sorted job ids>` — one unit per day and set of
 *   jobs (a rescan that claims the same jobs owing the same day adds nothing); a slice of a universe
 *   job's day hashes its members too, so each slice is its own unit.
 */
export function unitJobId(
  unit: Pick<QueuedUnit, 'kind' | 'jobId' | 'jobIds' | 'dueAt' | 'backfillId' | 'fromMs' | 'toMs' | 'slot'> & Partial<Pick<QueuedUnit, 'venue' | 'members'>>,
): string {
  if (unit.kind === 'session-day') {
    if (unit.venue === undefined || unit.fromMs === undefined || !unit.jobIds)
      throw new ValidationError('unit', 'a session-day unit with venue, fromMs and jobIds', unit);
    const jobs = createHash('sha256')
      .update([...unit.jobIds].sort().join('\n') + (unit.members ? `\n@${unit.members.join(',')}` : ''))
      .digest('hex')
      .slice(0, 20);
    return `day|${unit.venue}|${unit.fromMs}|${jobs}`;
  }
  if (unit.kind === 'backfill') {
    if (unit.backfillId === undefined || unit.fromMs === undefined || unit.toMs === undefined) {
      throw new ValidationError('unit', 'a backfill unit with backfillId, fromMs and toMs', unit);
    }
    return `bf|${escapeId(unit.backfillId)}|${unit.fromMs}-${unit.toMs}`;
  }
  if (unit.dueAt === undefined) throw new ValidationError('unit.dueAt', `the due time of a ${unit.kind} unit`, unit);
  return `live|${escapeId(unit.jobId)}|${unit.dueAt}${unit.slot === undefined ? '' : `|${unit.slot}`}`;
}
