import { registerMetric, type Counter, type Gauge, type Histogram, type Registry } from '@tickfleet/telemetry';

/** The scheduler's Prometheus metrics, registered from the telemetry metric catalog. */
export class SchedulerMetrics {
  readonly isLeader: Gauge;
  readonly unitsEnqueued: Counter<'venue'>;
  readonly duplicateEnqueues: Counter<'venue'>;
  readonly requeued: Counter<'venue'>;
  readonly claimed: Counter;
  readonly tickSeconds: Histogram;
  readonly tickErrors: Counter;

  constructor(registry: Registry) {
    this.isLeader = registerMetric(registry, 'tickfleet_scheduler_is_leader');
    this.unitsEnqueued = registerMetric(registry, 'tickfleet_scheduler_units_enqueued_total');
    this.duplicateEnqueues = registerMetric(registry, 'tickfleet_scheduler_duplicate_enqueues_total');
    this.requeued = registerMetric(registry, 'tickfleet_scheduler_requeued_total');
    this.claimed = registerMetric(registry, 'tickfleet_scheduler_claimed_total');
    this.tickSeconds = registerMetric(registry, 'tickfleet_scheduler_tick_seconds');
    this.tickErrors = registerMetric(registry, 'tickfleet_scheduler_tick_errors_total');
    this.isLeader.set(0);
  }
}
