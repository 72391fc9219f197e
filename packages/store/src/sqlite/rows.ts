import {
  DEFAULT_BOOK_COOLDOWN,
  type Backfill,
  type BackfillStatus,
  type Connector,
  type ConnectorStatus,
  type Gap,
  type GapKind,
  type Job,
  type JobType,
  type Pacing,
  type RateLimitPolicyName,
  type Timeframe,
} from '@tickfleet/core';

export interface ConnectorRow {
  venue: string;
  status: ConnectorStatus;
  base_url: string;
  policy: RateLimitPolicyName;
  rl_limit: number;
  period_ms: number;
  headroom: number;
  max_inflight: number;
  freeze_ms: number;
  freeze_max_ms: number;
  freeze_reset_ms: number | null;
  pacing: Pacing | null;
  aimd: string;
  book_cooldown: string | null;
  book_loop: string | null;
  created_at: number;
  updated_at: number;
}

export function toConnector(r: ConnectorRow): Connector {
  return {
    venue: r.venue,
    status: r.status,
    baseUrl: r.base_url,
    rateLimit: { policy: r.policy, limit: r.rl_limit, periodMs: r.period_ms, headroom: r.headroom },
    maxInflight: r.max_inflight,
    freezeMs: r.freeze_ms,
    freezeMaxMs: r.freeze_max_ms,
    ...(r.freeze_reset_ms !== null ? { freezeResetMs: r.freeze_reset_ms } : {}),
    ...(r.pacing !== null ? { pacing: r.pacing } : {}),
    aimd: JSON.parse(r.aimd) as Connector['aimd'],
    bookCooldown: r.book_cooldown === null ? { ...DEFAULT_BOOK_COOLDOWN } : (JSON.parse(r.book_cooldown) as Connector['bookCooldown']),
    bookLoop: r.book_loop === null ? undefined : (JSON.parse(r.book_loop) as NonNullable<Connector['bookLoop']>),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export interface JobRow {
  id: string;
  venue: string;
  type: JobType;
  symbol: string;
  timeframe: Timeframe | null;
  enabled: number;
  priority: number;
  next_run_at: number;
  locked_until: number | null;
  since: number | null;
  cursor: number | null;
  /** Added by schema v5; rows read by a claim carry it too. */
  per_cycle: number | null;
  /** Added with sliced per-day universe jobs. */
  member_cursor: string | null;
  runs: number;
  failures: number;
  last_run_at: number | null;
  last_success_at: number | null;
  last_error_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export function toJob(r: JobRow): Job {
  return {
    id: r.id,
    venue: r.venue,
    type: r.type,
    symbol: r.symbol,
    timeframe: r.timeframe,
    enabled: r.enabled === 1,
    priority: r.priority,
    nextRunAt: r.next_run_at,
    lockedUntil: r.locked_until,
    since: r.since,
    perCycle: r.per_cycle ?? null,
    cursor: r.cursor,
    memberCursor: r.member_cursor ?? null,
    stats: {
      runs: r.runs,
      failures: r.failures,
      lastRunAt: r.last_run_at,
      lastSuccessAt: r.last_success_at,
      lastErrorAt: r.last_error_at,
      lastError: r.last_error,
    },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export interface BackfillRow {
  id: string;
  job_id: string;
  from_ms: number;
  to_ms: number;
  units_total: number;
  units_done: number;
  units_failed: number;
  status: BackfillStatus;
  created_at: number;
  updated_at: number;
}

export function toBackfill(r: BackfillRow): Backfill {
  return {
    id: r.id,
    jobId: r.job_id,
    fromMs: r.from_ms,
    toMs: r.to_ms,
    unitsTotal: r.units_total,
    unitsDone: r.units_done,
    unitsFailed: r.units_failed,
    status: r.status,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export interface GapRow {
  job_id: string;
  from_ms: number;
  to_ms: number;
  kind: GapKind;
  detected_at: number;
  filled_at: number | null;
  attempts: number;
}

export function toGap(r: GapRow): Gap {
  return { jobId: r.job_id, fromMs: r.from_ms, toMs: r.to_ms, kind: r.kind, detectedAt: r.detected_at, filledAt: r.filled_at, attempts: r.attempts };
}

/** better-sqlite3 binds booleans only as numbers. */
export function bit(value: boolean): 0 | 1 {
  return value ? 1 : 0;
}
