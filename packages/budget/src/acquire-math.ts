import type { ConnectorStatus, RateLimitPolicyName } from '@tickfleet/core';
import type { AcquireResult, BudgetUsage } from './budget-types.js';
import { PAUSED_RETRY_MS, statusSends } from './venue-control/venue-status.js';

export { PAUSED_RETRY_MS };

/*
 * The budget's arithmetic, specified once. Every backend decides an acquire in one atomic operation
 * written in its own language: the SQLite statement (`sqlite-budgets-repo.ts`), the MongoDB update
 * pipeline (`mongo-budgets-repo.ts`), the Redis scripts (`acquireGcra-1.lua`, `consumeWindow-1.lua`
 * with per-window keys). Each must decide exactly as
 * {@link decideAcquire} and {@link decideObserve}; `packages/budget/test/budget-conformance.test.ts`
 * runs one table of cases through all of them and requires identical results. What the store
 * returns then becomes the caller's result through {@link toAcquireResult} and {@link onCallerClock}
 * (shared code, not repeated per backend).
 */

/**
 * How far a caller's clock may disagree with the budget's timeline before it counts as skewed.
 * Below it the difference is the ordinary race of a process that read its clock, then waited for
 * the store; above it the caller's clock is off (or jumped) and its results are translated.
 */
export const CLOCK_SKEW_TOLERANCE_MS = 2000;

/**
 * Sliding-window budgets count weight in `SLIDING_SLOTS` clock-aligned slots per period: a grant at
 * `t` needs room among the slots overlapping `[t - periodMs, t]` (the slot `t - periodMs` falls in
 * counted whole), so no window of `periodMs` the venue may measure, wherever it starts, holds more
 * than the limit. The price is at most one slot (5% of the period) of under-use after a full window.
 */
export const SLIDING_SLOTS = 20;

/** One slot of a sliding-window budget: `[index, weight]`, index `floor(t * SLIDING_SLOTS / periodMs)`. */
export type SlidingSlot = readonly [index: number, used: number];

/** Float slack of the GCRA test: `weight * periodMs / limit` may exceed `periodMs` by one ulp (47 * (1000 / 47)). */
const GCRA_EPSILON_MS = 1e-6;

/**
 * Moves a result's times from the budget's timeline onto the caller's clock: `offsetMs` is budget
 * time minus caller time. Only the retry time is the caller's to use; `atMs` and `windowStartMs`
 * keep naming the store's decision.
 */
export function onCallerClock(result: AcquireResult, offsetMs: number): AcquireResult {
  if (Math.abs(offsetMs) <= CLOCK_SKEW_TOLERANCE_MS) return result;
  if (result.ok) return { ...result, clockOffsetMs: offsetMs };
  return { ...result, retryAtMs: result.retryAtMs - offsetMs, clockOffsetMs: offsetMs };
}

/** The budget state an adapter read back from its one atomic acquire operation. */
export interface AcquireDecision {
  policy: RateLimitPolicyName;
  status: ConnectorStatus;
  /** Effective limit, `floor(limit * headroom)`. */
  limit: number;
  periodMs: number;
  weight: number;
  /** Whether the store granted the weight. */
  ok: boolean;
  /** Store time of the decision. */
  atMs: number;
  /** Fixed-window: window the state now refers to (the current one). */
  windowStartMs: number | null;
  /** Fixed-window: used weight in that window after the decision. */
  used: number;
  /** GCRA: theoretical arrival time after the decision (unchanged on refusal). */
  tatMs: number | null;
  /** Sliding-window: the slots still in the window after the decision, oldest first (absent for the other policies). */
  slots?: readonly SlidingSlot[];
}

/** What a backend keeps per venue (SQLite's `b_*` columns, MongoDB's budget document, Redis' keys). */
export interface BudgetRow {
  /** Fixed-window: the window `used` counts in (null before the first decision). */
  windowStartMs: number | null;
  used: number;
  /** GCRA: theoretical arrival time (null before the first grant). */
  tatMs: number | null;
  /** Store time of the latest decision; 0 before the first. The budget's timeline never moves back. */
  atMs: number;
  /** Sliding-window: weight per slot of the latest window, oldest first (empty before the first grant). */
  slots: readonly SlidingSlot[];
}

/** A budget no decision has touched yet. */
export const EMPTY_BUDGET_ROW: BudgetRow = Object.freeze({ windowStartMs: null, used: 0, tatMs: null, atMs: 0, slots: Object.freeze([]) });

/** One acquire as the store sees it: the connector's policy and status, and the store's time. */
export interface AcquireInput {
  policy: RateLimitPolicyName;
  status: ConnectorStatus;
  /** Effective limit, `effectiveLimit(rateLimit)` = `max(1, floor(limit * headroom))`. */
  limit: number;
  periodMs: number;
  weight: number;
  /** The store's time for this decision (its server clock, or the caller's clock corrected onto the timeline). */
  nowMs: number;
}

/**
 * The specification of one acquire: the row after it and the decision it returns.
 * - The decision's time is `max(nowMs, row.atMs)`: a writer that read its clock before waiting for
 *   the store never moves the timeline (and a window) back. The SQLite and MongoDB rows keep that
 *   time; the Redis budget has no such row (a key per window) and decides at the time it read,
 *   which is the same as long as a venue's decisions come in time order.
 * - Only a status that sends (`STATUS_EFFECTS`) can be granted; a refusal changes nothing but
 *   the window's roll-over and the time.
 * - `fixed-window`: the window is `floor(at / periodMs) * periodMs`; weight used in an older window
 *   counts 0; granted when `used + weight <= limit`.
 * - `gcra`: with `T = periodMs / limit`, `tat' = max(tat, at) + weight * T`; granted when
 *   `tat' - at <= periodMs` (plus {@link GCRA_EPSILON_MS}); a refusal leaves `tat`.
 * - `sliding-window`: slot `i = floor(at * SLIDING_SLOTS / periodMs)`; slots below
 *   `i - SLIDING_SLOTS` have left the window and are dropped (on a refusal too); granted when the
 *   rest plus `weight` is at most `limit`, and then added to slot `i`. `used` is the window's sum.
 */
export function decideAcquire(row: BudgetRow, input: AcquireInput): { decision: AcquireDecision; row: BudgetRow } {
  const { policy, status, limit, periodMs, weight } = input;
  const atMs = Math.max(input.nowMs, row.atMs);
  const sends = statusSends(status);
  let next: BudgetRow;
  let ok: boolean;
  if (policy === 'gcra') {
    const newTatMs = Math.max(row.tatMs ?? 0, atMs) + weight * emissionIntervalMs(limit, periodMs);
    ok = sends && newTatMs - atMs <= periodMs + GCRA_EPSILON_MS;
    next = { ...row, tatMs: ok ? newTatMs : row.tatMs, atMs };
  } else if (policy === 'sliding-window') {
    const index = slotIndex(atMs, periodMs);
    const live = row.slots.filter(([i]) => i >= index - SLIDING_SLOTS);
    const used = slotsWeight(live);
    ok = sends && used + weight <= limit;
    const cur = live.find(([i]) => i === index)?.[1] ?? 0;
    const slots = ok ? [...live.filter(([i]) => i !== index), [index, cur + weight] as const] : live;
    next = { ...row, slots, used: ok ? used + weight : used, atMs };
    return {
      decision: { policy, status, limit, periodMs, weight, ok, atMs, windowStartMs: null, used: next.used, tatMs: null, slots },
      row: next,
    };
  } else {
    const windowStartMs = Math.floor(atMs / periodMs) * periodMs;
    const used = row.windowStartMs === windowStartMs ? row.used : 0;
    ok = sends && used + weight <= limit;
    next = { ...row, windowStartMs, used: ok ? used + weight : used, atMs };
  }
  return {
    decision: { policy, status, limit, periodMs, weight, ok, atMs, windowStartMs: next.windowStartMs, used: next.used, tatMs: next.tatMs },
    row: next,
  };
}

/**
 * The specification of a venue-reported usage (`observe`): a fixed-window budget's current window
 * (at `max(nowMs, row.atMs)`) is raised to `usedWeight`, never lowered; a report about any other
 * window, or for a GCRA budget, changes nothing. The decision time is not moved.
 */
export function decideObserve(
  row: BudgetRow,
  input: { policy: RateLimitPolicyName; periodMs: number; usedWeight: number; windowStartMs: number; nowMs: number },
): BudgetRow {
  const atMs = Math.max(input.nowMs, row.atMs);
  if (input.policy !== 'fixed-window' || Math.floor(atMs / input.periodMs) * input.periodMs !== input.windowStartMs) return row;
  const used = row.windowStartMs === input.windowStartMs ? Math.max(row.used, input.usedWeight) : input.usedWeight;
  return { ...row, windowStartMs: input.windowStartMs, used };
}

/** The sliding-window slot `atMs` falls in. */
export function slotIndex(atMs: number, periodMs: number): number {
  return Math.floor((atMs * SLIDING_SLOTS) / periodMs);
}

function slotsWeight(slots: readonly SlidingSlot[]): number {
  return slots.reduce((sum, [, used]) => sum + used, 0);
}

/**
 * The earliest time `weight` fits into a sliding window holding `slots` (oldest first): when enough
 * of the oldest slots have left it. Slot `i` leaves at the start of slot `i + SLIDING_SLOTS + 1`.
 */
function slidingRetryAtMs(slots: readonly SlidingSlot[], weight: number, limit: number, periodMs: number): number {
  let left = slotsWeight(slots);
  for (const [i, used] of slots) {
    left -= used;
    if (left + weight <= limit) return Math.ceil(((i + SLIDING_SLOTS + 1) * periodMs) / SLIDING_SLOTS);
  }
  return 0;
}

/** GCRA emission interval: one unit of weight drains every `periodMs / limit` ms. */
export function emissionIntervalMs(limit: number, periodMs: number): number {
  return periodMs / limit;
}

/**
 * Turns the state an adapter's atomic operation returned into the caller's result. Nothing here
 * decides a grant: `decision.ok` was decided inside the store; this only derives the retry time
 * and usage figures from the state that decision left behind.
 */
export function toAcquireResult(d: AcquireDecision): AcquireResult {
  if (!statusSends(d.status)) {
    return { ok: false, reason: d.status, retryAtMs: d.atMs + PAUSED_RETRY_MS, limit: d.limit, atMs: d.atMs };
  }
  if (d.policy === 'fixed-window') {
    const windowStartMs = d.windowStartMs ?? Math.floor(d.atMs / d.periodMs) * d.periodMs;
    if (d.ok) return { ok: true, used: d.used, limit: d.limit, atMs: d.atMs, windowStartMs, windowEndMs: windowStartMs + d.periodMs };
    if (d.weight > d.limit) return { ok: false, reason: 'too-heavy', retryAtMs: d.atMs + d.periodMs, limit: d.limit, atMs: d.atMs };
    return { ok: false, reason: 'exhausted', retryAtMs: windowStartMs + d.periodMs, limit: d.limit, atMs: d.atMs };
  }
  if (d.policy === 'sliding-window') {
    if (d.ok) return { ok: true, used: d.used, limit: d.limit, atMs: d.atMs };
    if (d.weight > d.limit) return { ok: false, reason: 'too-heavy', retryAtMs: d.atMs + d.periodMs, limit: d.limit, atMs: d.atMs };
    return { ok: false, reason: 'exhausted', retryAtMs: slidingRetryAtMs(d.slots ?? [], d.weight, d.limit, d.periodMs), limit: d.limit, atMs: d.atMs };
  }
  const intervalMs = emissionIntervalMs(d.limit, d.periodMs);
  const tatMs = d.tatMs ?? d.atMs;
  if (d.ok) return { ok: true, used: gcraLevel(tatMs, d.atMs, intervalMs), limit: d.limit, atMs: d.atMs };
  if (d.weight > d.limit) return { ok: false, reason: 'too-heavy', retryAtMs: d.atMs + d.periodMs, limit: d.limit, atMs: d.atMs };
  const newTatMs = Math.max(tatMs, d.atMs) + d.weight * intervalMs;
  return { ok: false, reason: 'exhausted', retryAtMs: Math.ceil(newTatMs - d.periodMs), limit: d.limit, atMs: d.atMs };
}

/** Weight currently in the GCRA bucket, rounded up so a status display never under-reports. */
function gcraLevel(tatMs: number, nowMs: number, intervalMs: number): number {
  return Math.max(0, Math.ceil((tatMs - nowMs) / intervalMs - 1e-9));
}

export interface BudgetState {
  venue: string;
  policy: RateLimitPolicyName;
  limit: number;
  periodMs: number;
  windowStartMs: number | null;
  used: number;
  tatMs: number | null;
  /** Sliding-window: the stored slots (any order). */
  slots?: readonly SlidingSlot[];
}

/** Usage as of `nowMs` (store time), for status output and metrics. */
export function toBudgetUsage(s: BudgetState, nowMs: number): BudgetUsage {
  if (s.policy === 'sliding-window') {
    const index = slotIndex(nowMs, s.periodMs);
    const live = (s.slots ?? []).filter(([i]) => i >= index - SLIDING_SLOTS);
    const newest = Math.max(index - SLIDING_SLOTS - 1, ...live.map(([i]) => i));
    // Empty again once the newest slot with weight has left the window.
    const resetAtMs = live.length === 0 ? nowMs : Math.ceil(((newest + SLIDING_SLOTS + 1) * s.periodMs) / SLIDING_SLOTS);
    return { venue: s.venue, policy: s.policy, used: slotsWeight(live), limit: s.limit, periodMs: s.periodMs, windowStartMs: null, resetAtMs };
  }
  if (s.policy === 'fixed-window') {
    const windowStartMs = Math.floor(nowMs / s.periodMs) * s.periodMs;
    const used = s.windowStartMs === windowStartMs ? s.used : 0;
    return { venue: s.venue, policy: s.policy, used, limit: s.limit, periodMs: s.periodMs, windowStartMs, resetAtMs: windowStartMs + s.periodMs };
  }
  const tatMs = s.tatMs ?? nowMs;
  return {
    venue: s.venue,
    policy: s.policy,
    used: gcraLevel(tatMs, nowMs, emissionIntervalMs(s.limit, s.periodMs)),
    limit: s.limit,
    periodMs: s.periodMs,
    windowStartMs: null,
    resetAtMs: Math.max(Math.ceil(tatMs), nowMs),
  };
}
