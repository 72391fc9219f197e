import { Counter, Gauge, Histogram, type Registry } from '@tickfleet/telemetry';

/**
 * The worker's metrics. Labels are venue, endpoint, kind, outcome and status class: bounded sets.
 * The one per-job series, `tickfleet_cursor_lag_seconds{job}`, is bounded by the number of
 * candle jobs a fleet runs (documented in docs/metrics.md).
 */
export class WorkerMetrics {
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
  readonly cursorLagSeconds: Gauge<'job'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.units = new Counter({ name: 'tickfleet_units_total', help: 'Units finished by venue, kind and outcome (ok, yielded, rate_limited, failed, skipped)', labelNames: ['venue', 'kind', 'outcome'], registers });
    this.unitSeconds = new Histogram({ name: 'tickfleet_unit_duration_seconds', help: 'Time a unit held its slot', labelNames: ['venue', 'kind'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers });
    this.requestSeconds = new Histogram({ name: 'tickfleet_request_duration_seconds', help: 'Upstream request latency by venue and endpoint', labelNames: ['venue', 'endpoint'], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers });
    this.responses = new Counter({ name: 'tickfleet_responses_total', help: 'Upstream responses by status class (2xx, 4xx, 5xx, 429, 418, none)', labelNames: ['venue', 'status'], registers });
    this.rateLimited = new Counter({ name: 'tickfleet_rate_limited_total', help: 'Venue rate-limit answers (429) and bans (418)', labelNames: ['venue', 'status'], registers });
    this.budgetUsed = new Gauge({ name: 'tickfleet_budget_used', help: 'Weight used in the venue budget window at the last grant', labelNames: ['venue'], registers });
    this.budgetLimit = new Gauge({ name: 'tickfleet_budget_limit', help: 'Effective weight limit of the venue budget window', labelNames: ['venue'], registers });
    this.budgetYields = new Counter({ name: 'tickfleet_budget_yields_total', help: 'Units that yielded their slot because the budget was spent or the venue frozen', labelNames: ['venue'], registers });
    this.budgetWaits = new Counter({ name: 'tickfleet_budget_waits_total', help: 'Short in-place waits for a budget window about to reset', labelNames: ['venue'], registers });
    this.fallbackActive = new Gauge({ name: 'tickfleet_budget_fallback_active', help: '1 while the store is unreachable and the in-process fallback budget (limit / live workers) is used', labelNames: ['venue'], registers });
    this.freezeSeconds = new Gauge({ name: 'tickfleet_venue_freeze_seconds', help: 'Remaining fleet-wide freeze of the venue', labelNames: ['venue'], registers });
    this.concurrency = new Gauge({ name: 'tickfleet_aimd_concurrency', help: 'Fleet-wide concurrency the AIMD controller allows the venue', labelNames: ['venue'], registers });
    this.concurrencyCap = new Gauge({ name: 'tickfleet_venue_max_inflight', help: 'Connector cap on fleet-wide in-flight units', labelNames: ['venue'], registers });
    this.inflight = new Gauge({ name: 'tickfleet_worker_inflight_units', help: 'Units this worker process runs now', labelNames: ['venue'], registers });
    this.records = new Counter({ name: 'tickfleet_records_total', help: 'Records handed durably to the sink pipeline', labelNames: ['venue', 'channel'], registers });
    this.cursorLagSeconds = new Gauge({ name: 'tickfleet_cursor_lag_seconds', help: 'Age of the newest stored candle of a job (now - cursor - timeframe)', labelNames: ['job'], registers });
  }
}
