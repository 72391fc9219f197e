import { registerMetric, Registry, type Counter, type Gauge, type Histogram } from '@tickfleet/telemetry';
import type { SinkState } from './sink.js';

const STATE_VALUE: Record<SinkState, number> = { ok: 0, unavailable: 1, degraded: 2 };

/**
 * The persistence metrics, registered from the telemetry metric catalog (names, help, labels and
 * buckets live there). Labels are venue, channel and adapter only: symbols would multiply series
 * by thousands.
 */
export class PipelineMetrics {
  readonly batchWriteSeconds: Histogram<'adapter'>;
  readonly inserted: Counter<'adapter'>;
  readonly duplicates: Counter<'adapter'>;
  readonly ingestErrors: Counter<'venue' | 'adapter'>;
  readonly sinkState: Gauge<'adapter'>;
  readonly spoolBytes: Gauge;
  readonly spoolSegments: Gauge;
  readonly spoolAppended: Counter;
  readonly spoolDropped: Counter<'venue' | 'channel'>;
  readonly spoolReplayed: Counter;
  readonly dedupDropped: Counter<'venue' | 'channel'>;

  constructor(readonly registry: Registry = new Registry()) {
    this.batchWriteSeconds = registerMetric(registry, 'tickfleet_sink_batch_write_seconds');
    this.inserted = registerMetric(registry, 'tickfleet_sink_inserted_total');
    this.duplicates = registerMetric(registry, 'tickfleet_sink_duplicates_total');
    this.ingestErrors = registerMetric(registry, 'tickfleet_sink_ingest_errors_total');
    this.sinkState = registerMetric(registry, 'tickfleet_sink_state');
    this.spoolBytes = registerMetric(registry, 'tickfleet_spool_bytes');
    this.spoolSegments = registerMetric(registry, 'tickfleet_spool_segments');
    this.spoolAppended = registerMetric(registry, 'tickfleet_spool_appended_total');
    this.spoolDropped = registerMetric(registry, 'tickfleet_spool_dropped_total');
    this.spoolReplayed = registerMetric(registry, 'tickfleet_spool_replayed_total');
    this.dedupDropped = registerMetric(registry, 'tickfleet_dedup_dropped_total');
  }

  setSinkState(adapter: string, state: SinkState): void {
    this.sinkState.set({ adapter }, STATE_VALUE[state]);
  }
}
