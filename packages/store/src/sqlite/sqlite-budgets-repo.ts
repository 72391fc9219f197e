import type { Database, Statement } from 'better-sqlite3';
import { type Clock, type ConnectorStatus, type RateLimitPolicyName, ValidationError } from '@tickfleet/core';
import type { AcquireResult, BudgetUsage, BudgetsRepo } from '@tickfleet/budget';
// The policy math alone: the budget barrel also loads BullMQ, which a store-only process never needs.
import {
  CLOCK_SKEW_TOLERANCE_MS,
  decideAcquire,
  onCallerClock,
  PAUSED_RETRY_MS,
  toAcquireResult,
  toBudgetUsage,
  type AcquireDecision,
  type SlidingSlot,
} from '@tickfleet/budget/acquire-math';
import { prepareReturning } from './returning-statement.js';

/*
 * SQL fragments of the acquire statement, which implements the budget's specification
 * (`decideAcquire` and `decideObserve` of @tickfleet/budget's acquire-math.ts; the budget's
 * conformance test runs them side by side). They are constants (no input is interpolated), and every
 * value comes in as a bound parameter. Column references in SET read the row as it was before the
 * update; RETURNING reads it after.
 *
 * NOW: store time of the decision, never earlier than the previous decision on this venue. A process
 * takes `now` before it waits for the write lock, so without the MAX a late writer could carry an
 * older `now`, move the window back and reset a window that is still being spent. `:now` is the
 * caller's clock corrected onto the budget's timeline (see `SqliteBudgetsRepo.offsetMs`).
 */
const NOW = 'MAX(CAST(:now AS INTEGER), b_at)';
/** `effectiveLimit()` of core: floor(limit * headroom), at least 1. */
const EFF = 'MAX(1, CAST(rl_limit * headroom AS INTEGER))';
/** Fixed window containing NOW: floor(now / periodMs) * periodMs (integer division). */
const WS = `((${NOW} / period_ms) * period_ms)`;
/** Weight already spent in the current window (0 when the stored window has expired). */
const CUR = `(CASE WHEN b_window_start = ${WS} THEN b_used ELSE 0 END)`;
/** GCRA: tat' = max(tat, now) + weight * T with T = periodMs / effLimit. */
const NEW_TAT = `(MAX(COALESCE(b_tat, 0), ${NOW}) + :weight * (CAST(period_ms AS REAL) / ${EFF}))`;
/** 1e-6 absorbs float rounding of weight * T (e.g. 47 * (1000/47) may exceed 1000 by one ulp). */
const OK = `(status = 'active' AND CASE WHEN policy = 'gcra'
  THEN ${NEW_TAT} - ${NOW} <= period_ms + 1e-6
  ELSE ${CUR} + :weight <= ${EFF} END)`;

/** The acquire's RETURNING row, read raw (an array in the RETURNING list's order: no object per request). */
type DecisionRow = [
  status: ConnectorStatus,
  policy: RateLimitPolicyName,
  limit: number,
  periodMs: number,
  ok: number,
  atMs: number,
  windowStartMs: number | null,
  used: number,
  tatMs: number | null,
];

interface UsageRow {
  policy: RateLimitPolicyName;
  eff: number;
  period_ms: number;
  b_window_start: number | null;
  b_used: number;
  b_tat: number | null;
  b_slots: string | null;
  now: number;
}

/** What a sliding-window decision reads, inside its transaction. */
interface SlidingRow {
  status: ConnectorStatus;
  eff: number;
  period_ms: number;
  b_slots: string | null;
  b_at: number;
}

/**
 * Budgets on SQLite. `acquire` is one `UPDATE … WHERE venue = ? RETURNING`: SQLite takes the
 * database write lock before the statement reads, so the check and the spend are one step for every
 * connection in every process sharing the file (WAL, busy_timeout makes the others queue).
 *
 * Clock skew. SQLite has no server clock, so decisions use the callers' clocks, and the MAX above
 * makes the latest decision the budget's timeline. A caller whose clock runs ahead moves that
 * timeline forward (its first decision can open a new window early: at most one window of extra
 * weight per jump); a caller that finds the timeline more than CLOCK_SKEW_TOLERANCE_MS ahead of
 * its own clock learns the difference as `offsetMs` and from then on decides at its clock plus
 * the offset. Without that, a slow caller would decide at the same stored instant again and
 * again: the window would never end and the venue would sit idle for as long as the skew (an
 * hour's skew, an hour). With it every process counts in one timeline, so no window is charged
 * twice, and refusals carry retry times on the caller's own clock.
 */
export class SqliteBudgetsRepo implements BudgetsRepo {
  private readonly acquireStmt: Statement;
  private readonly observeStmt: Statement;
  private readonly usageStmt: Statement;
  /** A sliding-window acquire: read, decide (`decideAcquire`), write, under the write lock. */
  private readonly slidingAcquire: (venue: string, weight: number, now: number) => AcquireDecision | undefined;
  /** Budget timeline minus this process's clock, learned from the store; only ever grows. */
  private offsetMs = 0;

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    this.acquireStmt = prepareReturning(
      db,
      `
      UPDATE connectors SET
        b_ok           = ${OK},
        b_window_start = CASE WHEN policy <> 'fixed-window' THEN b_window_start ELSE ${WS} END,
        b_used         = CASE WHEN policy <> 'fixed-window' THEN b_used WHEN ${OK} THEN ${CUR} + :weight ELSE ${CUR} END,
        b_tat          = CASE WHEN policy = 'gcra' AND ${OK} THEN ${NEW_TAT} ELSE b_tat END,
        b_at           = ${NOW}
      WHERE venue = :venue
      RETURNING status, policy, ${EFF} AS eff, period_ms, b_ok, b_at, b_window_start, b_used, b_tat`,
    ).raw(true);
    // Raises (never lowers) the current window's usage to what the venue reported; a report about
    // any other window, or for a GCRA venue, matches no row and changes nothing.
    this.observeStmt = db.prepare(`
      UPDATE connectors SET
        b_used = CASE WHEN b_window_start = :windowStartMs THEN MAX(b_used, :usedWeight) ELSE :usedWeight END,
        b_window_start = :windowStartMs
      WHERE venue = :venue AND policy = 'fixed-window'
        AND CAST(:windowStartMs AS INTEGER) = ${WS}`);
    this.usageStmt = db.prepare(`
      SELECT policy, ${EFF} AS eff, period_ms, b_window_start, b_used, b_tat, b_slots, ${NOW} AS now
      FROM connectors WHERE venue = :venue`);
    const readSliding = db.prepare(`SELECT status, ${EFF} AS eff, period_ms, b_slots, b_at FROM connectors WHERE venue = :venue AND policy = 'sliding-window'`);
    const writeSliding = db.prepare(`UPDATE connectors SET b_slots = :slots, b_used = :used, b_at = :at, b_ok = :ok WHERE venue = :venue`);
    // The window's slots do not fit one UPDATE's arithmetic: the budget's own specification decides,
    // inside a BEGIN IMMEDIATE transaction (the write lock is taken before the read, as the UPDATE's is).
    const sliding = db.transaction((venue: string, weight: number, now: number): AcquireDecision | undefined => {
      const r = readSliding.get({ venue }) as SlidingRow | undefined;
      if (!r) return undefined;
      const row = { windowStartMs: null, used: 0, tatMs: null, atMs: r.b_at, slots: parseSlots(r.b_slots) };
      const { decision, row: next } = decideAcquire(row, {
        policy: 'sliding-window',
        status: r.status,
        limit: r.eff,
        periodMs: r.period_ms,
        weight,
        nowMs: now,
      });
      writeSliding.run({ venue, slots: JSON.stringify(next.slots), used: next.used, at: next.atMs, ok: decision.ok ? 1 : 0 });
      return decision;
    });
    this.slidingAcquire = (venue, weight, now) => sliding.immediate(venue, weight, now);
  }

  /** This process's correction onto the budget's timeline (0 while its clock agrees with the others'). */
  get clockOffsetMs(): number {
    return this.offsetMs;
  }

  async acquire(venue: string, weight: number): Promise<AcquireResult> {
    if (!Number.isInteger(weight) || weight <= 0) throw new ValidationError('weight', 'a positive integer', weight);
    const local = this.clock.now();
    const now = local + this.offsetMs;
    const row = this.acquireStmt.get({ venue, weight, now }) as DecisionRow | undefined;
    if (!row) return { ok: false, reason: 'unknown-venue', retryAtMs: local + PAUSED_RETRY_MS, limit: 0, atMs: now };
    const [status, policy, limit, periodMs, ok, atMs, windowStartMs, used, tatMs] = row;
    if (policy === 'sliding-window') return this.acquireSliding(venue, weight, local);
    // The timeline was ahead of our (corrected) clock by more than a lock wait explains: follow it.
    // The decision just made already counted in the timeline's window, so it stands.
    if (atMs - now > CLOCK_SKEW_TOLERANCE_MS) this.offsetMs += atMs - now;
    const result = toAcquireResult({ policy, status, limit, periodMs, weight, ok: ok === 1, atMs, windowStartMs, used, tatMs });
    return onCallerClock(result, this.offsetMs);
  }

  /** A sliding-window venue's acquire (the UPDATE above left its budget as it was). */
  private acquireSliding(venue: string, weight: number, local: number): AcquireResult {
    const now = local + this.offsetMs;
    const d = this.slidingAcquire(venue, weight, now);
    if (!d) return { ok: false, reason: 'unknown-venue', retryAtMs: local + PAUSED_RETRY_MS, limit: 0, atMs: now };
    if (d.atMs - now > CLOCK_SKEW_TOLERANCE_MS) this.offsetMs += d.atMs - now;
    return onCallerClock(toAcquireResult(d), this.offsetMs);
  }

  async observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void> {
    if (!Number.isInteger(usedWeight) || usedWeight < 0) throw new ValidationError('usedWeight', 'a non-negative integer', usedWeight);
    this.observeStmt.run({ venue, usedWeight, windowStartMs, now: this.clock.now() + this.offsetMs });
  }

  async usage(venue: string): Promise<BudgetUsage | null> {
    const row = this.usageStmt.get({ venue, now: this.clock.now() + this.offsetMs }) as UsageRow | undefined;
    if (!row) return null;
    return toBudgetUsage(
      {
        venue,
        policy: row.policy,
        limit: row.eff,
        periodMs: row.period_ms,
        windowStartMs: row.b_window_start,
        used: row.b_used,
        tatMs: row.b_tat,
        slots: parseSlots(row.b_slots),
      },
      row.now,
    );
  }
}

/** A sliding-window budget's stored slots (written only by this repo, from the specification's own rows). */
function parseSlots(json: string | null): SlidingSlot[] {
  return json === null ? [] : (JSON.parse(json) as SlidingSlot[]);
}
