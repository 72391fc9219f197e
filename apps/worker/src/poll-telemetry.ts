import {
  BannedError,
  type Envelope,
  POLL_ERROR_MESSAGE_MAX,
  type PollErrorRecord,
  type PollStatsRecord,
  RateLimitedError,
  TransientError,
  UnrecoverableError,
} from '@tickfleet/core';
import { WORKER_DEFAULTS } from './worker-defaults.js';

/** How a failed book poll is counted: by HTTP status class, timeout, or neither. */
export type PollErrorClass = 'http_4xx' | 'http_5xx' | 'http_429' | 'timeout' | 'other';

/** The HTTP status a failed request carried, when the venue answered. */
export function errorStatus(err: unknown): number | undefined {
  if (err instanceof RateLimitedError) return 429;
  if (err instanceof BannedError) return 418;
  if (err instanceof TransientError || err instanceof UnrecoverableError) return err.status;
  return undefined;
}

/**
 * How a failed book poll is counted: a 429 (or 418 ban) apart from other 4xx, then 5xx, then a
 * timeout (a TransientError without status whose cause is the request's timeout or abort).
 */
export function pollErrorClass(err: unknown): PollErrorClass {
  if (err instanceof RateLimitedError || err instanceof BannedError) return 'http_429';
  const status = errorStatus(err);
  if (status !== undefined && status >= 500) return 'http_5xx';
  if (status !== undefined && status >= 400) return 'http_4xx';
  const causeName = err instanceof TransientError ? (err.cause as { name?: unknown } | undefined)?.name : undefined;
  return causeName === 'TimeoutError' || causeName === 'AbortError' ? 'timeout' : 'other';
}

export interface PollOutcome {
  symbol: string;
  ok: boolean;
  latencyMs: number;
  /** Failed polls: the HTTP status, when the venue answered. */
  status?: number;
  errorClass?: PollErrorClass;
  /** Failed polls: the error's class name and message. */
  errorType?: string;
  message?: string;
  marketId?: string;
  slug?: string;
}

export interface PollTelemetryOptions {
  venue: string;
  workerId: string;
  /** Polls the rolling latency window holds. @defaultValue {@link WORKER_DEFAULTS.pollLatencyWindow} */
  latencyWindow?: number;
  /** Error records kept per interval; the rest are only counted. @defaultValue {@link WORKER_DEFAULTS.pollMaxErrorsPerInterval} */
  maxErrorsPerInterval?: number;
}

/** What one interval of a venue's book polling produced: its stats record and the sampled errors. */
export interface PollInterval {
  stats: PollStatsRecord;
  errors: PollErrorRecord[];
}

/**
 * One venue's order-book polling statistics in one worker, cut into fixed intervals by
 * {@link flush}: polls submitted / ok / failed, failures by 4xx, 5xx, 429 and timeout, p50/p95
 * latency over a rolling window of the latest polls (not reset per interval, so a quiet interval
 * still reports the recent latency), and up to `maxErrorsPerInterval` sampled error records (the
 * first ones of the interval; the others only counted in `errorsSuppressed`). That bound keeps the
 * `poll_errors` stream at most `maxErrorsPerInterval` records per venue, worker and interval however
 * many polls fail, each message cut to {@link POLL_ERROR_MESSAGE_MAX} characters.
 */
export class PollTelemetry {
  private readonly latencies: number[] = [];
  private next = 0;
  private readonly windowSize: number;
  private readonly maxErrors: number;
  private counts = emptyCounts();
  private errors: PollErrorRecord[] = [];
  private suppressed = 0;

  constructor(private readonly options: PollTelemetryOptions) {
    this.windowSize = options.latencyWindow ?? WORKER_DEFAULTS.pollLatencyWindow;
    this.maxErrors = options.maxErrorsPerInterval ?? WORKER_DEFAULTS.pollMaxErrorsPerInterval;
  }

  /** Whether anything was polled since the last flush. */
  get idle(): boolean {
    return this.counts.submitted === 0;
  }

  record(outcome: PollOutcome): void {
    const c = this.counts;
    c.submitted += 1;
    if (this.latencies.length < this.windowSize) this.latencies.push(outcome.latencyMs);
    else this.latencies[this.next] = outcome.latencyMs;
    this.next = (this.next + 1) % this.windowSize;
    if (outcome.ok) {
      c.ok += 1;
      return;
    }
    c.failed += 1;
    switch (outcome.errorClass ?? 'other') {
      case 'http_4xx':
        c.http4xx += 1;
        break;
      case 'http_5xx':
        c.http5xx += 1;
        break;
      case 'http_429':
        c.http429 += 1;
        break;
      case 'timeout':
        c.timeouts += 1;
        break;
      case 'other':
        c.otherErrors += 1;
        break;
    }
    if (this.errors.length >= this.maxErrors) {
      this.suppressed += 1;
      return;
    }
    this.errors.push({
      venue: this.options.venue,
      symbol: outcome.symbol,
      ...(outcome.marketId === undefined ? {} : { marketId: outcome.marketId }),
      ...(outcome.slug === undefined ? {} : { slug: outcome.slug }),
      ...(outcome.status === undefined ? {} : { status: outcome.status }),
      latencyMs: Math.round(outcome.latencyMs),
      errorType: outcome.errorType ?? 'Error',
      message: (outcome.message ?? '').slice(0, POLL_ERROR_MESSAGE_MAX),
    });
  }

  /** p50 and p95 of the rolling latency window (nearest rank), null before the first poll. */
  percentiles(): { p50: number | null; p95: number | null } {
    if (this.latencies.length === 0) return { p50: null, p95: null };
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
    return { p50: at(0.5), p95: at(0.95) };
  }

  /** Ends the interval `[fromMs, toMs)`: its stats record and sampled errors; counting starts over. */
  flush(
    fromMs: number,
    toMs: number,
    state: { activeInstruments: number; activeVersion: number; cooldownRemainingMs: number; inflightLimit: number; poolSize: number },
  ): PollInterval {
    const { p50, p95 } = this.percentiles();
    const stats: PollStatsRecord = {
      venue: this.options.venue,
      symbol: this.options.venue,
      workerId: this.options.workerId,
      fromMs,
      toMs,
      ...state,
      ...this.counts,
      p50LatencyMs: p50,
      p95LatencyMs: p95,
      errorsSampled: this.errors.length,
      errorsSuppressed: this.suppressed,
    };
    const errors = this.errors;
    this.counts = emptyCounts();
    this.errors = [];
    this.suppressed = 0;
    return { stats, errors };
  }
}

function emptyCounts() {
  return { submitted: 0, ok: 0, failed: 0, http4xx: 0, http5xx: 0, http429: 0, timeouts: 0, otherErrors: 0 };
}

/** The stats record's envelope: one per (venue, worker, interval start), so a re-sent interval dedups. */
export function pollStatsEnvelope(stats: PollStatsRecord): Envelope {
  return {
    v: 1,
    messageId: `${stats.venue}:poll_stats:${stats.workerId}:${stats.fromMs}`,
    venue: stats.venue,
    channel: 'poll_stats',
    symbol: stats.symbol,
    receivedAtMs: stats.toMs,
    payload: { ...stats },
  };
}

/** An error record's envelope, stamped with the end of its interval and keyed by its place in it. */
export function pollErrorEnvelope(error: PollErrorRecord, workerId: string, intervalFromMs: number, intervalToMs: number, index: number): Envelope {
  return {
    v: 1,
    messageId: `${error.venue}:poll_errors:${workerId}:${intervalFromMs}:${index}`,
    venue: error.venue,
    channel: 'poll_errors',
    symbol: error.symbol,
    receivedAtMs: intervalToMs,
    payload: { ...error },
  };
}
