import { createHash } from 'node:crypto';

/** Defaults of the per-instrument backoff after a failed book snapshot (`FleetVenueControl.bookBackoffMs`). */
export const BOOK_BACKOFF_DEFAULTS = Object.freeze({
  /** Delay of the first failure; doubled per failure in a row. */
  baseMs: 5000,
  /** Upper bound of any delay. */
  maxMs: 300_000,
});

/** Largest share of a backoff the per-instrument jitter adds. */
export const BOOK_BACKOFF_JITTER = 0.25;

/**
 * A failed instrument's backoff with its jitter: `delayMs` plus up to {@link BOOK_BACKOFF_JITTER}
 * of it, the share drawn from a hash of the instrument's job id. Deterministic per instrument, so
 * the instruments of one outage spread out instead of coming back together, and one instrument's
 * retries are reproducible (the same share every time).
 */
export function jitteredBackoffMs(jobId: string, delayMs: number): number {
  const share = createHash('sha256').update(jobId).digest().readUInt32BE(0) / 0x1_0000_0000;
  return delayMs + Math.floor(delayMs * BOOK_BACKOFF_JITTER * share);
}
