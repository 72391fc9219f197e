/**
 * What the spool does with a record that would take it past `maxTotalBytes`, or that its disk
 * refuses (ENOSPC/EDQUOT):
 * - `drop_all`: drop it (counted per venue and channel);
 * - `drop_book_keep_trades`: drop order-book snapshots (a later snapshot supersedes them) and
 *   block on everything else (trades, candles, …) until replay frees space;
 * - `block`: wait until replay (or the operator) frees space (backpressure up to the producer).
 * A record is never acknowledged unless it was fully written (and fsynced when `fsync` is on);
 * a blocked append gives up after `blockTimeoutMs` with a SpoolFullError so its caller can
 * return the work and try again later.
 */
export const ON_FULL_POLICIES = ['drop_all', 'drop_book_keep_trades', 'block'] as const;
export type OnFullPolicy = (typeof ON_FULL_POLICIES)[number];

export interface SpoolOptions {
  /** Directory of the segment files; one writing process per directory (a lock file enforces it). */
  dir: string;
  /** A segment rotates when the next frame would pass this size. @defaultValue {@link SPOOL_DEFAULTS.maxSegmentBytes} */
  maxSegmentBytes?: number;
  /** Cap on all segments together. @defaultValue {@link SPOOL_DEFAULTS.maxTotalBytes} */
  maxTotalBytes?: number;
  /** @defaultValue {@link SPOOL_DEFAULTS.onFull} */
  onFull?: OnFullPolicy;
  /** fsync after every append, so an acknowledged record survives power loss, not only a process crash. @defaultValue {@link SPOOL_DEFAULTS.fsync} */
  fsync?: boolean;
  /**
   * How long a blocked append waits for space before it fails with a SpoolFullError (nothing of
   * it acknowledged), so a unit does not hold its slot through a long outage. @defaultValue {@link SPOOL_DEFAULTS.blockTimeoutMs}
   */
  blockTimeoutMs?: number;
  /** While the disk is full, how often a refused write is tried again. @defaultValue {@link SPOOL_DEFAULTS.diskRetryMs} */
  diskRetryMs?: number;
  /** When a caller refused by a full spool should come back (SpoolFullError.retryAtMs). @defaultValue {@link SPOOL_DEFAULTS.retryAfterMs} */
  retryAfterMs?: number;
}
