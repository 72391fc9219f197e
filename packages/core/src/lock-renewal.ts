/**
 * How often a holder renews a lock or lease that lives `ttlMs`: every third of it, so two
 * renewals may fail before it lapses (at least every millisecond).
 */
export function renewEveryMsFor(ttlMs: number): number {
  return Math.max(1, Math.floor(ttlMs / 3));
}
