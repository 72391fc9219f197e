import type { RateLimitPolicyName } from '@tickfleet/core';
/*
 * The budget as the rest of the system sees it. The state store adapters implement
 * {@link BudgetsRepo} with one atomic operation each; the policy math that turns what that
 * operation returned into these results lives in `acquire-math.ts`.
 */

/** Result of spending weight from a venue's budget. */
export type AcquireResult =
  | {
      ok: true;
      /** Weight spent in the current window (fixed-window) or the bucket level (gcra), after this grant. */
      used: number;
      /** Effective limit: `floor(limit * headroom)`. */
      limit: number;
      /** Store time of the decision (epoch ms; MongoDB: server `$$NOW`). */
      atMs: number;
      /** Fixed-window: start of the window charged. GCRA: undefined. */
      windowStartMs?: number;
      /** Fixed-window: end of the window charged (`windowStartMs + periodMs`). GCRA: undefined. */
      windowEndMs?: number;
      /** See the refusal's `clockOffsetMs`. */
      clockOffsetMs?: number;
    }
  | {
      ok: false;
      /**
       * Earliest time a retry of the same weight can succeed, on the caller's clock (translated
       * when the caller's clock is off the budget's timeline); for a paused connector, now + its poll interval.
       */
      retryAtMs: number;
      reason: 'exhausted' | 'paused' | 'disabled' | 'unknown-venue' | 'too-heavy';
      limit: number;
      atMs: number;
      /**
       * Set when the caller's clock is off the budget's timeline by more than
       * CLOCK_SKEW_TOLERANCE_MS: budget time at the decision minus the caller's clock (positive
       * when the caller is behind). The decision itself was made on the budget's timeline.
       */
      clockOffsetMs?: number;
    };

export interface BudgetUsage {
  venue: string;
  policy: RateLimitPolicyName;
  /** Weight used in the current window (fixed-window) or current bucket level (gcra). */
  used: number;
  limit: number;
  periodMs: number;
  windowStartMs: number | null;
  /** When the current window ends (fixed-window) or the bucket is empty again (gcra). */
  resetAtMs: number;
}

export interface BudgetsRepo {
  /** Spends `weight` from the venue's budget in one atomic store operation. */
  acquire(venue: string, weight: number): Promise<AcquireResult>;
  /**
   * Raises the usage of the window starting at `windowStartMs` to `usedWeight` when the venue
   * reported more than we counted (never lowers it). Ignored for a window that is not current.
   */
  observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void>;
  usage(venue: string): Promise<BudgetUsage | null>;
}
