import type { BudgetGateMetrics } from '@tickfleet/budget';
import { registerMetric, type Counter, type Gauge, type Histogram, type Registry } from '@tickfleet/telemetry';

/**
 * The worker's metrics, registered from the telemetry metric catalog (names, help, labels and
 * buckets live there; docs/metrics.md is generated from it). Labels are venue, endpoint, kind,
 * outcome and status class: bounded sets. The one per-job series,
 * `tickfleet_cursor_lag_seconds{job_id}`, is bounded by the number of candle jobs a fleet runs.
 * The budget gate writes its series through the {@link BudgetGateMetrics} part.
 */
export class WorkerMetrics implements BudgetGateMetrics {
  readonly units: Counter<'venue' | 'kind' | 'outcome'>;
  readonly unitSeconds: Histogram<'venue' | 'kind'>;
  readonly requestSeconds: Histogram<'venue' | 'endpoint'>;
  readonly responses: Counter<'venue' | 'status'>;
  readonly rateLimited: Counter<'venue' | 'status'>;
  readonly budgetUsed: Gauge<'venue'>;
  readonly budgetLimit: Gauge<'venue'>;
  readonly budgetYields: Counter<'venue'>;
  readonly budgetWaits: Counter<'venue'>;
  readonly fallbackActive: Gauge<'venue'>;
  readonly freezeSeconds: Gauge<'venue'>;
  readonly concurrency: Gauge<'venue'>;
  readonly concurrencyCap: Gauge<'venue'>;
  readonly inflight: Gauge<'venue'>;
  readonly records: Counter<'venue' | 'channel'>;
  readonly cursorLagSeconds: Gauge<'job_id'>;
  readonly unitFailures: Counter<'venue' | 'cause'>;
  readonly malformedPayloads: Counter<'venue'>;
  readonly budgetClockOffset: Gauge<'venue'>;
  readonly bookPolls: Counter<'venue' | 'outcome'>;
  readonly bookPollLatencyP50: Gauge<'venue'>;
  readonly bookPollLatencyP95: Gauge<'venue'>;
  readonly bookActiveInstruments: Gauge<'venue'>;
  readonly bookCooldownSeconds: Gauge<'venue'>;
  readonly bookCooldowns: Counter<'venue'>;

  constructor(registry: Registry) {
    this.units = registerMetric(registry, 'tickfleet_units_total');
    this.unitSeconds = registerMetric(registry, 'tickfleet_unit_duration_seconds');
    this.requestSeconds = registerMetric(registry, 'tickfleet_request_duration_seconds');
    this.responses = registerMetric(registry, 'tickfleet_responses_total');
    this.rateLimited = registerMetric(registry, 'tickfleet_rate_limited_total');
    this.budgetUsed = registerMetric(registry, 'tickfleet_budget_used');
    this.budgetLimit = registerMetric(registry, 'tickfleet_budget_limit');
    this.budgetYields = registerMetric(registry, 'tickfleet_budget_yields_total');
    this.budgetWaits = registerMetric(registry, 'tickfleet_budget_waits_total');
    this.fallbackActive = registerMetric(registry, 'tickfleet_budget_fallback_active');
    this.freezeSeconds = registerMetric(registry, 'tickfleet_venue_freeze_seconds');
    this.concurrency = registerMetric(registry, 'tickfleet_aimd_concurrency');
    this.concurrencyCap = registerMetric(registry, 'tickfleet_venue_max_inflight');
    this.inflight = registerMetric(registry, 'tickfleet_worker_inflight_units');
    this.records = registerMetric(registry, 'tickfleet_records_total');
    this.cursorLagSeconds = registerMetric(registry, 'tickfleet_cursor_lag_seconds');
    this.unitFailures = registerMetric(registry, 'tickfleet_unit_failures_total');
    this.malformedPayloads = registerMetric(registry, 'tickfleet_malformed_payloads_total');
    this.budgetClockOffset = registerMetric(registry, 'tickfleet_budget_clock_offset_seconds');
    this.bookPolls = registerMetric(registry, 'tickfleet_book_polls_total');
    this.bookPollLatencyP50 = registerMetric(registry, 'tickfleet_book_poll_latency_p50_seconds');
    this.bookPollLatencyP95 = registerMetric(registry, 'tickfleet_book_poll_latency_p95_seconds');
    this.bookActiveInstruments = registerMetric(registry, 'tickfleet_book_active_instruments');
    this.bookCooldownSeconds = registerMetric(registry, 'tickfleet_book_cooldown_seconds');
    this.bookCooldowns = registerMetric(registry, 'tickfleet_book_cooldowns_total');
  }
}
