import { type ConnectorStatus, formatDurationMs } from '@tickfleet/core';
import { TRANSIENT_RETRY } from '@tickfleet/queues';

/**
 * Why a unit attempt failed (the worker's classification, by error type: `failureCause`). A closed
 * set: the health window keeps one count per cause and metrics label by it.
 */
export const FAILURE_CAUSES = ['server_error', 'timeout', 'connection', 'malformed', 'store_unavailable', 'unrecoverable', 'other'] as const;
export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** Every health state of a venue; the metric exports one series per state. */
export const VENUE_HEALTH_STATES = ['healthy', 'degraded', 'failing', 'frozen', 'paused', 'disabled', 'idle'] as const;
export type VenueHealthState = (typeof VENUE_HEALTH_STATES)[number];

/**
 * Defaults of a venue's health: the fleet-wide window of unit outcomes the workers keep (bucket
 * size and count, written by the reporting worker) and the thresholds {@link venueHealth} judges it by.
 */
export const VENUE_HEALTH_DEFAULTS = Object.freeze({
  /** One bucket of the outcome window. */
  bucketMs: 60_000,
  /** Buckets in the window: outcomes of the last `bucketMs * buckets` count (5 minutes). */
  buckets: 5,
  /**
   * Failures in a row, fleet-wide, with no success since, that make a venue `failing` (a load
   * balancer's unhealthy threshold); also the fewest failures of a window judged failing by its ratio.
   */
  failingStreak: 5,
  /** A window with at least this share of failures is `failing` (almost every unit fails). */
  failingRatio: 0.9,
  /** A window with more than this share of failures is `degraded`... */
  degradedRatio: 0.1,
  /** ...once it holds at least this many failures (one timeout among a few successes is not a degradation). */
  degradedMinFailures: 2,
  /**
   * Successes in a row that make a venue `healthy` again whatever failures its window still holds
   * (a load balancer's healthy threshold): a venue back from an outage reads healthy as soon as
   * it answers again, not only once the outage left the window.
   */
  recoveredStreak: 10,
  /**
   * A failure streak whose last failure is older than this no longer makes a venue `failing` (its
   * jobs went away): twice the longest wait of a unit retried after a transient failure, so a
   * failing venue whose units wait out that cap stays failing.
   */
  failingStaleMs: 2 * TRANSIENT_RETRY.capMs,
  /** The last error's message is kept up to this many characters. */
  messageMaxChars: 200,
  /** The health record of a venue nobody reports on expires after this long. */
  recordTtlMs: 86_400_000,
});

export type VenueHealthSettings = { -readonly [K in keyof typeof VENUE_HEALTH_DEFAULTS]: number };

/** The venue's last failed unit: its cause, when, and a short message with no URL query, credentials or keys. */
export interface VenueLastError {
  cause: FailureCause;
  atMs: number;
  message: string;
}

/** What the fleet reported about a venue's recent units (`FleetVenueControl.outcomeRecord`). */
export interface VenueOutcomeRecord {
  /** The window's length and its outcomes: successes, failures and failures by cause. */
  window: { ms: number; ok: number; failed: number; byCause: Partial<Record<FailureCause, number>> };
  /** Failures in a row, fleet-wide, since the last success (0 when the last outcome succeeded). */
  failureStreak: number;
  /** Successes in a row since the last failure. */
  successStreak: number;
  lastError: VenueLastError | null;
  lastSuccessAtMs: number | null;
  /** The venue's last 429/418 (it does not count as a failed unit: the freeze answers it). */
  lastRateLimitAtMs: number | null;
}

/** What else decides a venue's health besides its outcomes. */
export interface VenueHealthContext {
  /** The connector's status; null: the venue has no connector. */
  status: ConnectorStatus | null;
  /** The freeze in force (its end and cause), or null. */
  freeze: { untilMs: number; cause: string } | null;
  /** End of the venue's order-book cooldown (0 or past: none). */
  bookCooldownUntilMs: number;
  nowMs: number;
}

export interface VenueHealth extends VenueOutcomeRecord {
  state: VenueHealthState;
  /** Why, in one line. */
  reason: string;
}

/** A venue nothing was reported about yet. */
export const EMPTY_OUTCOME_RECORD: VenueOutcomeRecord = Object.freeze({
  window: Object.freeze({ ms: VENUE_HEALTH_DEFAULTS.bucketMs * VENUE_HEALTH_DEFAULTS.buckets, ok: 0, failed: 0, byCause: Object.freeze({}) }),
  failureStreak: 0,
  successStreak: 0,
  lastError: null,
  lastSuccessAtMs: null,
  lastRateLimitAtMs: null,
});

/**
 * A venue's health state, first match wins:
 * - `disabled` / `paused`: its connector's status (an operator's decision outranks what the venue does);
 * - `frozen`: a freeze is in force (429, 418, budget or manual);
 * - `failing`: the last `failingStreak` units fleet-wide failed with no success since (the last
 *   failure not older than `failingStaleMs`), or the window holds at least `failingStreak`
 *   failures and `failingRatio` of its outcomes failed;
 * - `degraded`: more than `degradedRatio` of the window failed (at least `degradedMinFailures`),
 *   or every outcome of it did, a 429/418 within the window, or the order-book polling cooling down;
 * - the window's failure ratio judges neither `failing` nor `degraded` once the last
 *   `recoveredStreak` units succeeded (a venue back from an outage is healthy when it answers again);
 * - `idle`: no unit finished within the window (nothing to judge; the last error stays shown);
 * - `healthy` otherwise.
 */
export function venueHealth(record: VenueOutcomeRecord, context: VenueHealthContext, settings: VenueHealthSettings = VENUE_HEALTH_DEFAULTS): VenueHealth {
  const judged = (state: VenueHealthState, reason: string): VenueHealth => ({ ...record, state, reason });
  const { window: w, lastError } = record;
  const { nowMs } = context;
  const total = w.ok + w.failed;
  const span = formatDurationMs(w.ms);
  const causes = causeSummary(w.byCause);
  if (context.status === 'disabled' || context.status === 'paused') return judged(context.status, `connector ${context.status}`);
  if (context.freeze && context.freeze.untilMs > nowMs)
    return judged('frozen', `frozen (${context.freeze.cause}) for ${formatDurationMs(context.freeze.untilMs - nowMs)} more`);
  if (record.failureStreak >= settings.failingStreak && lastError && nowMs - lastError.atMs <= settings.failingStaleMs)
    return judged('failing', `the last ${record.failureStreak} units failed, none succeeded since (last: ${lastError.cause})`);
  // A run of successes outweighs the failures still in the window, not a 429 or a cooldown.
  const recovered = record.successStreak >= settings.recoveredStreak;
  if (!recovered && w.failed >= settings.failingStreak && w.failed >= settings.failingRatio * total)
    return judged('failing', `${w.failed} of ${total} units failed in the last ${span} (${causes})`);
  if (!recovered && w.failed > 0 && (w.ok === 0 || (w.failed >= settings.degradedMinFailures && w.failed > settings.degradedRatio * total)))
    return judged('degraded', `${w.failed} of ${total} units failed in the last ${span} (${causes})`);
  if (record.lastRateLimitAtMs !== null && nowMs - record.lastRateLimitAtMs <= w.ms)
    return judged('degraded', `rate limited by the venue ${formatDurationMs(Math.max(0, nowMs - record.lastRateLimitAtMs))} ago`);
  if (context.bookCooldownUntilMs > nowMs)
    return judged('degraded', `order-book polling cools down for ${formatDurationMs(context.bookCooldownUntilMs - nowMs)} more`);
  if (total === 0) return judged('idle', `no unit finished in the last ${span}`);
  if (recovered && w.failed > 0) return judged('healthy', `the last ${record.successStreak} units succeeded (${w.failed} failed earlier in the last ${span})`);
  return judged('healthy', `${w.ok} of ${total} units succeeded in the last ${span}`);
}

/** `connection 12, timeout 1`: the window's failures by cause, most first. */
function causeSummary(byCause: Partial<Record<FailureCause, number>>): string {
  return (Object.entries(byCause) as Array<[FailureCause, number]>)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ');
}

/** Query strings, credentials and key-like values that an error message must not carry into Redis, `status` or metrics. */
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;
const SECRET_PATTERN = /\b((?:api[_-]?key|apikey|key|token|secret|signature|password|passwd|auth|authorization)["']?\s*[=:]\s*["']?)[^\s&"',;]+/gi;

/**
 * A failure's message as the health record keeps it: every URL cut to its scheme, host and path
 * (no user, password or query), `key=value` pairs of credential-like names masked, whitespace
 * collapsed, at most `maxChars`. Adapters name endpoints rather than URLs, so this is a second line
 * of defence: an error of a library that quotes its URL must not leak a key that rides in a query.
 */
export function sanitizeErrorMessage(message: string, maxChars: number = VENUE_HEALTH_DEFAULTS.messageMaxChars): string {
  const cleaned = message
    .replace(URL_PATTERN, (raw) => {
      try {
        const u = new URL(raw);
        return `${u.protocol}//${u.host}${u.pathname}`;
      } catch {
        return '<url>';
      }
    })
    .replace(SECRET_PATTERN, '$1***')
    .replace(/\s+/g, ' ')
    .trim();
  return cleaned.length <= maxChars ? cleaned : `${cleaned.slice(0, maxChars - 1)}…`;
}

/**
 * A venue's outcome record from its health hash (fields as `reportOutcome-3.lua` writes them)
 * and the last 429 of its control hash: the slots whose bucket lies in the window ending at
 * `nowMs`, summed. A record never written reads as {@link EMPTY_OUTCOME_RECORD}.
 */
export function parseOutcomeRecord(fields: Readonly<Record<string, string>>, lastRateLimitAtMs: number | null, nowMs: number): VenueOutcomeRecord {
  const bucketMs = Number(fields.bms);
  const buckets = Number(fields.nb);
  if (!(bucketMs > 0 && buckets > 0)) return { ...EMPTY_OUTCOME_RECORD, lastRateLimitAtMs };
  const current = Math.floor(nowMs / bucketMs);
  const byCause: Partial<Record<FailureCause, number>> = {};
  let ok = 0;
  let failed = 0;
  for (let i = 0; i < buckets; i++) {
    const bucket = Number(fields[`b${i}`]);
    if (!(bucket > current - buckets && bucket <= current)) continue;
    ok += Number(fields[`o${i}`] ?? 0);
    failed += Number(fields[`f${i}`] ?? 0);
    for (const [cause, n] of Object.entries(parseCauses(fields[`c${i}`]))) {
      const known = asFailureCause(cause);
      byCause[known] = (byCause[known] ?? 0) + n;
    }
  }
  const lastErrorAt = Number(fields.let ?? 0);
  const lastSuccessAt = Number(fields.okt ?? 0);
  return {
    window: { ms: bucketMs * buckets, ok, failed, byCause },
    failureStreak: Number(fields.fs ?? 0),
    successStreak: Number(fields.ss ?? 0),
    lastError: lastErrorAt > 0 ? { cause: asFailureCause(fields.lec ?? 'other'), atMs: lastErrorAt, message: fields.lem ?? '' } : null,
    lastSuccessAtMs: lastSuccessAt > 0 ? lastSuccessAt : null,
    lastRateLimitAtMs,
  };
}

function parseCauses(raw: string | undefined): Record<string, number> {
  if (raw === undefined) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, number] => typeof e[1] === 'number' && e[1] > 0));
  } catch {
    return {};
  }
}

function asFailureCause(cause: string): FailureCause {
  return (FAILURE_CAUSES as readonly string[]).includes(cause) ? (cause as FailureCause) : 'other';
}
