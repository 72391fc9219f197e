import { ValidationError } from '@tickfleet/core';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** The processes that expose a metric on their `/metrics`. */
export type MetricRole = 'worker' | 'scheduler' | 'dashboard';

/** One row of the catalog: everything needed to create the prom-client metric and to document it. */
export interface MetricSpec {
  type: MetricType;
  help: string;
  labelNames: readonly string[];
  /** Histogram buckets in seconds; only for histograms. */
  buckets?: readonly number[];
  roles: readonly MetricRole[];
  /**
   * The alerts (`alert:<name>`) and Grafana panels (`panel:<dashboard uid>/<panel title>`) that
   * read the metric. Kept in sync with deploy/ by scripts/deploy-tests/catalog-usage.test.ts.
   */
  usedBy: readonly string[];
  /** Why the label set stays bounded when it is not obviously so (documented in docs/metrics.md). */
  cardinality?: string;
}

const UNIT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] as const;
const REQUEST_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const SINK_BATCH_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15] as const;
const SCHEDULER_TICK_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/**
 * Every tickfleet metric, one row each. Roles create their metrics from here with
 * {@link registerMetric}, so a name, its labels and its buckets are written once; docs/metrics.md
 * is rendered from this table (scripts/gen-metrics-doc.ts) and a test fails when they differ.
 *
 * Cardinality rule: labels are venue, kind, outcome, endpoint, status class, channel, adapter,
 * queue state and freeze cause, all small closed sets, and `stream` (a stream definition's name,
 * bounded by the streams an operator defines). No symbol and no job id appears on a high-rate
 * series; the one per-job gauge, `tickfleet_cursor_lag_seconds{job_id}`, is a gauge set
 * once per unit and bounded by the number of enabled candle jobs.
 */
export const METRIC_CATALOG = {
  // ---- worker: units and upstream requests -------------------------------------------------
  tickfleet_units_total: {
    type: 'counter',
    help: 'Units finished by venue, kind and outcome (ok, yielded, rate_limited, returned, store_unavailable, spool_full, retried, failed, skipped, cooldown)',
    labelNames: ['venue', 'kind', 'outcome'],
    roles: ['worker'],
    usedBy: [
      'alert:TickfleetUnitFailureRatioHigh',
      'panel:tickfleet-fleet-overview/Units finished by outcome',
      'panel:tickfleet-venue-drilldown/Units by kind and outcome',
    ],
  },
  tickfleet_unit_failures_total: {
    type: 'counter',
    help: 'Failed unit attempts by cause (server_error, timeout, connection, malformed, store_unavailable: state store or sink unreachable, unrecoverable, other); transient causes retry with capped backoff',
    labelNames: ['venue', 'cause'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Unit failures by cause'],
    cardinality: 'cause is one of seven fixed values',
  },
  tickfleet_malformed_payloads_total: {
    type: 'counter',
    help: 'Venue responses that did not have the documented shape (truncated or wrong JSON); a sample of each kind is logged at a bounded rate',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Unit failures by cause'],
  },
  // ---- worker: order-book polling (per venue, per worker) ---------------------------------
  tickfleet_book_polls_total: {
    type: 'counter',
    help: 'Finished order-book polls by outcome: ok, http_4xx, http_5xx, http_429, timeout, other (stored per interval in the poll_stats stream)',
    labelNames: ['venue', 'outcome'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book polls by outcome and cooldowns'],
    cardinality: 'outcome is one of six fixed values',
  },
  tickfleet_book_poll_latency_p50_seconds: {
    type: 'gauge',
    help: 'Median order-book poll latency over the rolling window of the latest 512 polls, set every poll-stats interval',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book poll latency, active set and cooldown'],
  },
  tickfleet_book_poll_latency_p95_seconds: {
    type: 'gauge',
    help: '95th-percentile order-book poll latency over the rolling window of the latest 512 polls, set every poll-stats interval',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book poll latency, active set and cooldown'],
  },
  tickfleet_book_active_instruments: {
    type: 'gauge',
    help: "Instruments in the venue's active order-book set (the snapshot discovery swaps in), as this worker last read it",
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book poll latency, active set and cooldown'],
  },
  tickfleet_book_cooldown_seconds: {
    type: 'gauge',
    help: "Remaining fleet-wide order-book cooldown of the venue (its book polls paused after most of one window's polls failed)",
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book poll latency, active set and cooldown'],
  },
  tickfleet_book_cooldowns_total: {
    type: 'counter',
    help: "Order-book cooldowns this worker's polls started (a window's failure ratio reached the connector's bookCooldown.failureRatio)",
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Order-book polls by outcome and cooldowns'],
  },
  // ---- worker: streams ---------------------------------------------------------------------
  tickfleet_stream_messages_total: {
    type: 'counter',
    help: 'Data messages (trades, book diffs, book updates) received by the streams this worker holds',
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Stream messages, gaps and resyncs'],
    cardinality: 'stream is a stream definition name: bounded by the streams an operator defines (tens), each held by one worker at a time',
  },
  tickfleet_stream_reconnects_total: {
    type: 'counter',
    help: "Reconnections of a held stream's venue connection (after a disconnect, silence or refusal)",
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetStreamReconnectStorm', 'panel:tickfleet-venue-drilldown/Stream messages, gaps and resyncs'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_stream_gaps_total: {
    type: 'counter',
    help: 'Trade-id gaps of held streams by outcome: found, healed (filled from REST), unhealed (on the gap ledger with their id range)',
    labelNames: ['venue', 'stream', 'outcome'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetStreamUnhealedGaps', 'panel:tickfleet-venue-drilldown/Stream messages, gaps and resyncs'],
    cardinality: 'stream is a stream definition name; outcome is one of three fixed values',
  },
  tickfleet_stream_resyncs_total: {
    type: 'counter',
    help: 'Order books of held streams rebuilt from a new snapshot after a sequence break, checksum mismatch or reconnect',
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Stream messages, gaps and resyncs'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_stream_last_message_age_seconds: {
    type: 'gauge',
    help: 'Time since a held stream last received anything (data, heartbeat or ping), as of the last stats cycle',
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetStreamSilent', 'panel:tickfleet-venue-drilldown/Stream time skew and silence'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_stream_skew_p50_seconds: {
    type: 'gauge',
    help: "Median of receive time minus the venue's event time over a held stream's last 2048 data messages",
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Stream time skew and silence'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_stream_skew_p99_seconds: {
    type: 'gauge',
    help: "99th percentile of receive time minus the venue's event time over a held stream's last 2048 data messages",
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Stream time skew and silence'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_stream_out_of_order_total: {
    type: 'counter',
    help: 'Data messages of held streams whose venue event time went backwards within their symbol and channel',
    labelNames: ['venue', 'stream'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Stream messages, gaps and resyncs'],
    cardinality: 'stream is a stream definition name (see tickfleet_stream_messages_total)',
  },
  tickfleet_unit_duration_seconds: {
    type: 'histogram',
    help: 'Time a unit held its slot',
    labelNames: ['venue', 'kind'],
    buckets: UNIT_BUCKETS,
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Unit duration percentiles'],
  },
  tickfleet_request_duration_seconds: {
    type: 'histogram',
    help: 'Upstream request latency by venue and endpoint',
    labelNames: ['venue', 'endpoint'],
    buckets: REQUEST_BUCKETS,
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Request latency p95 by venue', 'panel:tickfleet-venue-drilldown/Request latency percentiles by endpoint'],
    cardinality: "endpoint is the adapter's endpoint name (a handful per venue), never a URL with parameters",
  },
  tickfleet_responses_total: {
    type: 'counter',
    help: 'Upstream responses by status class (2xx, 4xx, 5xx, 429, 418, none)',
    labelNames: ['venue', 'status'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/429 and 418 share of responses', 'panel:tickfleet-venue-drilldown/Responses by status class'],
  },
  tickfleet_rate_limited_total: {
    type: 'counter',
    help: 'Venue rate-limit answers (429) and bans (418)',
    labelNames: ['venue', 'status'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/429 and 418 share of responses', 'panel:tickfleet-venue-drilldown/429 and 418 answers'],
  },
  tickfleet_records_total: {
    type: 'counter',
    help: 'Records handed durably to the sink pipeline',
    labelNames: ['venue', 'channel'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Records collected per second', 'panel:tickfleet-venue-drilldown/Records per second by channel'],
  },
  tickfleet_cursor_lag_seconds: {
    type: 'gauge',
    help: "Age of the next candle a job waits for: now minus the open time of the first candle the venue's trading calendar expects after the cursor (now - cursor - timeframe on 24/7 venues)",
    // Not `job`: Prometheus's own target label, which would rename it exported_job on scrape.
    labelNames: ['job_id'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Most lagging jobs'],
    cardinality:
      'the one per-job series: set once per unit, bounded by the number of enabled candle jobs; alerts use the per-venue tickfleet_job_cursor_lag_max_seconds and tickfleet_job_cursor_lag_cadence_ratio_max instead',
  },
  // ---- worker: budgets, freezes, AIMD ----------------------------------------------------------
  tickfleet_budget_used: {
    type: 'gauge',
    help: 'Weight used in the venue budget window at the last grant',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: [
      'alert:TickfleetBudgetExhausted',
      'panel:tickfleet-fleet-overview/Budget utilization by venue',
      'panel:tickfleet-venue-drilldown/Budget used vs limit',
    ],
  },
  tickfleet_budget_limit: {
    type: 'gauge',
    help: 'Effective weight limit of the venue budget window',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: [
      'alert:TickfleetBudgetExhausted',
      'panel:tickfleet-fleet-overview/Budget utilization by venue',
      'panel:tickfleet-venue-drilldown/Budget used vs limit',
    ],
  },
  tickfleet_budget_yields_total: {
    type: 'counter',
    help: 'Units that yielded their slot because the budget was spent or the venue frozen',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Budget yields and waits'],
  },
  tickfleet_budget_waits_total: {
    type: 'counter',
    help: 'Short in-place waits for a budget window about to reset',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Budget yields and waits'],
  },
  tickfleet_budget_fallback_active: {
    type: 'gauge',
    help: '1 while the budget is unreachable from this worker: it spends only its unexpired lease, then nothing',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetBudgetFallbackActive', 'panel:tickfleet-venue-drilldown/Fallback budget active'],
  },
  tickfleet_budget_clock_offset_seconds: {
    type: 'gauge',
    help: "How far this worker's clock is off the venue budget's timeline (budget time minus local time; 0 within the 2 s tolerance)",
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Budget clock offset by worker'],
  },
  tickfleet_venue_freeze_seconds: {
    type: 'gauge',
    help: 'Remaining fleet-wide freeze of the venue',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Freeze remaining'],
  },
  tickfleet_aimd_concurrency: {
    type: 'gauge',
    help: 'Fleet-wide concurrency the AIMD controller allows the venue',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/AIMD concurrency vs cap', 'panel:tickfleet-venue-drilldown/AIMD concurrency vs cap and in-flight'],
  },
  tickfleet_venue_max_inflight: {
    type: 'gauge',
    help: 'Connector cap on fleet-wide in-flight units',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/AIMD concurrency vs cap', 'panel:tickfleet-venue-drilldown/AIMD concurrency vs cap and in-flight'],
  },
  tickfleet_worker_inflight_units: {
    type: 'gauge',
    help: 'Units this worker process runs now',
    labelNames: ['venue'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/AIMD concurrency vs cap and in-flight'],
  },
  // ---- worker: sink pipeline and spool (packages/sinks) ------------------------------------
  tickfleet_sink_batch_write_seconds: {
    type: 'histogram',
    help: 'Latency of one batch write into the primary sink, retries included',
    labelNames: ['adapter'],
    buckets: SINK_BATCH_BUCKETS,
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Sink batch write p95'],
  },
  tickfleet_sink_inserted_total: {
    type: 'counter',
    help: 'Records stored by the primary sink',
    labelNames: ['adapter'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Sink inserts and duplicates'],
  },
  tickfleet_sink_duplicates_total: {
    type: 'counter',
    help: 'Records the sink already held (same key)',
    labelNames: ['adapter'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Sink inserts and duplicates'],
  },
  tickfleet_sink_ingest_errors_total: {
    type: 'counter',
    help: 'Records rejected as malformed, and records of batches the sink failed to take (then spooled), by venue',
    labelNames: ['venue', 'adapter'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Sink ingest errors'],
  },
  tickfleet_sink_state: {
    type: 'gauge',
    help: 'Primary sink state: 0 ok, 1 unavailable, 2 degraded',
    labelNames: ['adapter'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetSinkUnavailable', 'panel:tickfleet-fleet-overview/Sink state by worker'],
  },
  tickfleet_spool_bytes: {
    type: 'gauge',
    help: 'Bytes in spool segments',
    labelNames: [],
    roles: ['worker'],
    usedBy: ['alert:TickfleetSpoolGrowing', 'panel:tickfleet-fleet-overview/Spool bytes by worker'],
  },
  tickfleet_spool_segments: {
    type: 'gauge',
    help: 'Spool segment files',
    labelNames: [],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Spool bytes by worker'],
  },
  tickfleet_spool_appended_total: {
    type: 'counter',
    help: 'Records appended to the spool',
    labelNames: [],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Spool appended vs replayed'],
  },
  tickfleet_spool_dropped_total: {
    type: 'counter',
    help: 'Records dropped because the spool was full (onFull policy)',
    labelNames: ['venue', 'channel'],
    roles: ['worker'],
    usedBy: ['alert:TickfleetSpoolDroppingRecords', 'panel:tickfleet-fleet-overview/Spool appended vs replayed'],
  },
  tickfleet_spool_replayed_total: {
    type: 'counter',
    help: 'Spooled records replayed into the primary sink',
    labelNames: [],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-fleet-overview/Spool appended vs replayed'],
  },
  tickfleet_dedup_dropped_total: {
    type: 'counter',
    help: 'Records dropped by the in-memory dedup window',
    labelNames: ['venue', 'channel'],
    roles: ['worker'],
    usedBy: ['panel:tickfleet-venue-drilldown/Records per second by channel'],
  },
  // ---- scheduler -------------------------------------------------------------------------------
  tickfleet_scheduler_is_leader: {
    type: 'gauge',
    help: '1 while this scheduler replica holds the leader lock',
    labelNames: [],
    roles: ['scheduler'],
    usedBy: ['alert:TickfleetSchedulerNoLeader', 'alert:TickfleetSchedulerSplitBrain', 'panel:tickfleet-fleet-overview/Scheduler leaders'],
  },
  tickfleet_scheduler_units_enqueued_total: {
    type: 'counter',
    help: 'Units added to venue queues',
    labelNames: ['venue'],
    roles: ['scheduler'],
    usedBy: ['panel:tickfleet-fleet-overview/Units enqueued by the scheduler', 'panel:tickfleet-venue-drilldown/Units enqueued, duplicates and requeued'],
  },
  tickfleet_scheduler_duplicate_enqueues_total: {
    type: 'counter',
    help: 'Units not added because a unit with the same deterministic id was still queued or running',
    labelNames: ['venue'],
    roles: ['scheduler'],
    usedBy: ['panel:tickfleet-venue-drilldown/Units enqueued, duplicates and requeued'],
  },
  tickfleet_scheduler_requeued_total: {
    type: 'counter',
    help: 'Finished units replaced by a new run because the store still showed the job due (worker died before updating it)',
    labelNames: ['venue'],
    roles: ['scheduler'],
    usedBy: ['panel:tickfleet-venue-drilldown/Units enqueued, duplicates and requeued'],
  },
  tickfleet_scheduler_claimed_total: {
    type: 'counter',
    help: 'Due jobs leased from the state store',
    labelNames: [],
    roles: ['scheduler'],
    usedBy: ['panel:tickfleet-fleet-overview/Units enqueued by the scheduler'],
  },
  tickfleet_scheduler_tick_seconds: {
    type: 'histogram',
    help: 'Duration of one scheduler tick (leader ticks claim and enqueue)',
    labelNames: [],
    buckets: SCHEDULER_TICK_BUCKETS,
    roles: ['scheduler'],
    usedBy: ['panel:tickfleet-fleet-overview/Scheduler tick p95'],
  },
  tickfleet_scheduler_tick_errors_total: {
    type: 'counter',
    help: 'Ticks that failed (store or Redis unreachable); the next tick retries',
    labelNames: [],
    roles: ['scheduler'],
    usedBy: ['alert:TickfleetSchedulerTickErrors', 'panel:tickfleet-fleet-overview/Scheduler tick p95'],
  },
  // ---- dashboard: fleet-level gauges read from Redis and the store at scrape time -------------
  tickfleet_queue_units: {
    type: 'gauge',
    help: 'Units in the venue queue by BullMQ state (waiting, prioritized, delayed, active, completed, failed)',
    labelNames: ['venue', 'state'],
    roles: ['dashboard'],
    usedBy: ['alert:TickfleetNoLiveWorkers', 'panel:tickfleet-fleet-overview/Queue units by state', 'panel:tickfleet-venue-drilldown/Queue units by state'],
  },
  tickfleet_venue_runnable_units: {
    type: 'gauge',
    help: 'Waiting units that could run now: venue not frozen and its budget admits them (the autoscaling signal)',
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: [
      'alert:TickfleetBudgetExhausted',
      'alert:TickfleetRunnableBacklogGrowing',
      'panel:tickfleet-fleet-overview/Runnable vs budget-blocked units',
      'panel:tickfleet-venue-drilldown/Runnable vs budget-blocked units',
    ],
  },
  tickfleet_venue_budget_blocked_units: {
    type: 'gauge',
    help: 'Waiting units that cannot run now because the venue is frozen or its budget is spent (more workers would not help)',
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: [
      'alert:TickfleetBudgetExhausted',
      'panel:tickfleet-fleet-overview/Runnable vs budget-blocked units',
      'panel:tickfleet-venue-drilldown/Runnable vs budget-blocked units',
    ],
  },
  tickfleet_venue_frozen: {
    type: 'gauge',
    help: '1 for the cause of the freeze in force (429, 418, budget, manual), 0 for the other causes',
    labelNames: ['venue', 'cause'],
    roles: ['dashboard'],
    usedBy: [
      'alert:TickfleetVenueBanned',
      'alert:TickfleetVenueFrozen',
      'panel:tickfleet-fleet-overview/Frozen venues',
      'panel:tickfleet-venue-drilldown/Freeze by cause',
    ],
    cardinality: 'cause is one of four values; every cause is exported for every venue so a freeze ending reads 0, not a vanished series',
  },
  tickfleet_venue_health: {
    type: 'gauge',
    help: "1 for the venue's health state now (healthy, degraded, failing, frozen, paused, disabled, idle: judged from the fleet's unit outcomes of the last minutes, its status and freeze), 0 for the other states",
    labelNames: ['venue', 'state'],
    roles: ['dashboard'],
    usedBy: ['alert:TickfleetVenueFailing'],
    cardinality: 'state is one of seven values; every state is exported for every venue so a state that ends reads 0, not a vanished series',
  },
  tickfleet_gaps_open: {
    type: 'gauge',
    help: 'Open gaps in the gap ledger (holes in collected history not yet filled)',
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: ['alert:TickfleetGapsNotShrinking', 'panel:tickfleet-fleet-overview/Open gaps', 'panel:tickfleet-venue-drilldown/Open gaps'],
  },
  tickfleet_live_workers: {
    type: 'gauge',
    help: 'Worker processes with a fresh heartbeat for the venue',
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: ['alert:TickfleetNoLiveWorkers', 'panel:tickfleet-fleet-overview/Live workers by venue', 'panel:tickfleet-venue-drilldown/Live workers'],
  },
  tickfleet_job_cursor_lag_max_seconds: {
    type: 'gauge',
    help: "Largest cursor lag among the venue's enabled jobs, computed from the store (grows even when no worker runs)",
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: ['panel:tickfleet-fleet-overview/Oldest cursor lag by venue', 'panel:tickfleet-venue-drilldown/Oldest cursor lag'],
  },
  tickfleet_job_cursor_lag_cadence_ratio_max: {
    type: 'gauge',
    help: "Largest ratio of cursor lag to the job's cadence (timeframe or poll period) among the venue's enabled jobs; above 3 the data is stale",
    labelNames: ['venue'],
    roles: ['dashboard'],
    usedBy: ['alert:TickfleetStaleData', 'panel:tickfleet-venue-drilldown/Cursor lag in cadences'],
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRIC_CATALOG;

type Spec<N extends MetricName> = (typeof METRIC_CATALOG)[N];
/** The label names of catalog metric `N`, as a union (never for unlabelled metrics). */
export type MetricLabels<N extends MetricName> = Spec<N>['labelNames'][number];
/** The prom-client class a catalog metric is created as, with its labels typed. */
export type CatalogMetric<N extends MetricName> = Spec<N>['type'] extends 'counter'
  ? Counter<MetricLabels<N>>
  : Spec<N>['type'] extends 'gauge'
    ? Gauge<MetricLabels<N>>
    : Histogram<MetricLabels<N>>;

/** Every catalog row with its name, in catalog order. */
export function catalogEntries(): Array<MetricSpec & { name: MetricName }> {
  return (Object.keys(METRIC_CATALOG) as MetricName[]).map((name) => ({ name, ...(METRIC_CATALOG[name] as MetricSpec) }));
}

/** Whether `name` is a catalog metric. */
export function isCatalogMetric(name: string): name is MetricName {
  return Object.hasOwn(METRIC_CATALOG, name);
}

/**
 * Creates catalog metric `name` in `registry` from its row (type, help, labels, buckets). When the
 * registry already holds it (two components of one process share a registry), the existing
 * metric is returned instead of failing on the duplicate name, as both would count the same thing.
 */
export function registerMetric<N extends MetricName>(registry: Registry, name: N): CatalogMetric<N> {
  const spec: MetricSpec = METRIC_CATALOG[name];
  const existing = registry.getSingleMetric(name);
  if (existing) {
    const expected = spec.type === 'counter' ? Counter : spec.type === 'gauge' ? Gauge : Histogram;
    if (!(existing instanceof expected)) throw new ValidationError(`metric ${name}`, `a ${spec.type} as in the metric catalog`, existing.constructor.name);
    return existing as CatalogMetric<N>;
  }
  const base = { name, help: spec.help, labelNames: [...spec.labelNames], registers: [registry] };
  switch (spec.type) {
    case 'counter':
      return new Counter(base) as CatalogMetric<N>;
    case 'gauge':
      return new Gauge(base) as CatalogMetric<N>;
    case 'histogram':
      return new Histogram({ ...base, buckets: [...(spec.buckets ?? [])] }) as CatalogMetric<N>;
  }
}

/** Registers every catalog metric of `role` (or all of them) in `registry`; returns their names. */
export function registerRoleMetrics(registry: Registry, role?: MetricRole): MetricName[] {
  const names = catalogEntries()
    .filter((e) => role === undefined || e.roles.includes(role))
    .map((e) => e.name);
  for (const name of names) registerMetric(registry, name);
  return names;
}
