import { Counter, Gauge, Histogram, type Registry } from '@tickfleet/telemetry';

/** The scheduler's Prometheus metrics. */
export class SchedulerMetrics {
  readonly isLeader: Gauge;
  readonly unitsEnqueued: Counter<'venue'>;
  readonly duplicateEnqueues: Counter<'venue'>;
  readonly requeued: Counter<'venue'>;
  readonly claimed: Counter;
  readonly tickSeconds: Histogram;
  readonly tickErrors: Counter;

  constructor(registry: Registry) {
    this.isLeader = new Gauge({
      name: 'tickfleet_scheduler_is_leader',
      help: '1 while this scheduler replica holds the leader lock',
      registers: [registry],
    });
    this.unitsEnqueued = new Counter({
      name: 'tickfleet_scheduler_units_enqueued_total',
      help: 'Units added to venue queues',
      labelNames: ['venue'],
      registers: [registry],
    });
    this.duplicateEnqueues = new Counter({
      name: 'tickfleet_scheduler_duplicate_enqueues_total',
      help: 'Units not added because a unit with the same deterministic id was still queued or running',
      labelNames: ['venue'],
      registers: [registry],
    });
    this.requeued = new Counter({
      name: 'tickfleet_scheduler_requeued_total',
      help: 'Finished units replaced by a new run because the store still showed the job due (worker died before updating it)',
      labelNames: ['venue'],
      registers: [registry],
    });
    this.claimed = new Counter({
      name: 'tickfleet_scheduler_claimed_total',
      help: 'Due jobs leased from the state store',
      registers: [registry],
    });
    this.tickSeconds = new Histogram({
      name: 'tickfleet_scheduler_tick_seconds',
      help: 'Duration of one scheduler tick (leader ticks claim and enqueue)',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.tickErrors = new Counter({
      name: 'tickfleet_scheduler_tick_errors_total',
      help: 'Ticks that failed (store or Redis unreachable); the next tick retries',
      registers: [registry],
    });
    this.isLeader.set(0);
  }
}
