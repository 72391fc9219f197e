/**
 * What the spool does with a record that would take it past `maxTotalBytes`:
 * - `drop_all`: drop it (counted per venue and channel);
 * - `drop_book_keep_trades`: drop order-book snapshots (a later snapshot supersedes them) and
 *   block on everything else (trades, candles, …) until replay frees space;
 * - `block`: wait until replay frees space (backpressure up to the producer).
 */
export const ON_FULL_POLICIES = ['drop_all', 'drop_book_keep_trades', 'block'] as const;
export type OnFullPolicy = (typeof ON_FULL_POLICIES)[number];

export interface SpoolOptions {
  /** Directory of the segment files; one writing process per directory (a lock file enforces it). */
  dir: string;
  /** A segment rotates when the next frame would pass this size. @defaultValue 67108864 (64 MiB) */
  maxSegmentBytes?: number;
  /** Cap on all segments together. @defaultValue 1073741824 (1 GiB) */
  maxTotalBytes?: number;
  /** @defaultValue 'block' */
  onFull?: OnFullPolicy;
  /** fsync after every append, so an acknowledged record survives power loss, not only a process crash. @defaultValue true */
  fsync?: boolean;
}

/** The spool directory when neither `--spool-dir` nor `TICKFLEET_SPOOL_DIR` is given. */
export const DEFAULT_SPOOL_DIR = '.tickfleet/spool';
