import type { ConnectorStatus, RateLimitPolicyName } from '@tickfleet/core';
import type { AcquireResult, BudgetUsage } from './budget-types.js';
import { PAUSED_RETRY_MS, statusSends } from './venue-control/venue-status.js';

export { PAUSED_RETRY_MS };

/**
 * How far a caller's clock may disagree with the budget's timeline before it counts as skewed.
 * Below it the difference is the ordinary race of a process that read its clock, then waited for
 * the store; above it the caller's clock is off (or jumped) and its results are translated.
 */
export const CLOCK_SKEW_TOLERANCE_MS = 2000;

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
}

/** Usage as of `nowMs` (store time), for status output and metrics. */
export function toBudgetUsage(s: BudgetState, nowMs: number): BudgetUsage {
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
