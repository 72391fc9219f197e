/** What the sink holds of one series against what the emulation says exists. */
export interface CandleReport {
  expected: number;
  stored: number;
  /** Expected open times not stored. */
  missing: number;
  /** Open times stored more than once. */
  duplicates: number;
  /** Stored open times the emulation does not have in the range. */
  unexpected: number;
  /** Newest stored open time in the range, or null. */
  newest: number | null;
}

/** The report of `stored` open times (as read, duplicates included) against the `expected` ones. */
export function compareCandles(stored: readonly number[], expected: ReadonlySet<number>): CandleReport {
  const seen = new Set<number>();
  let duplicates = 0;
  let unexpected = 0;
  for (const t of stored) {
    if (seen.has(t)) duplicates += 1;
    seen.add(t);
    if (!expected.has(t)) unexpected += 1;
  }
  let missing = 0;
  for (const t of expected) if (!seen.has(t)) missing += 1;
  return { expected: expected.size, stored: stored.length, missing, duplicates, unexpected, newest: stored.length ? Math.max(...stored) : null };
}
