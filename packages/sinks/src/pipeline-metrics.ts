import { Counter, Gauge, Histogram, Registry } from '@tickfleet/telemetry';
import type { SinkState } from './sink.js';

const STATE_VALUE: Record<SinkState, number> = { ok: 0, unavailable: 1, degraded: 2 };

/**
 * The persistence metric catalog. Labels are venue, channel and adapter only: symbols would
 * multiply series by thousands.
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
    const registers = [registry];
    this.batchWriteSeconds = new Histogram({
      name: 'tickfleet_sink_batch_write_seconds',
      help: 'Latency of one batch write into the primary sink, retries included',
      labelNames: ['adapter'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15],
      registers,
    });
    this.inserted = new Counter({ name: 'tickfleet_sink_inserted_total', help: 'Records stored by the primary sink', labelNames: ['adapter'], registers });
    this.duplicates = new Counter({ name: 'tickfleet_sink_duplicates_total', help: 'Records the sink already held (same key)', labelNames: ['adapter'], registers });
    this.ingestErrors = new Counter({
      name: 'tickfleet_sink_ingest_errors_total',
      help: 'Records rejected as malformed or batches the sink failed to take, by venue',
      labelNames: ['venue', 'adapter'],
      registers,
    });
    this.sinkState = new Gauge({ name: 'tickfleet_sink_state', help: 'Primary sink state: 0 ok, 1 unavailable, 2 degraded', labelNames: ['adapter'], registers });
    this.spoolBytes = new Gauge({ name: 'tickfleet_spool_bytes', help: 'Bytes in spool segments', registers });
    this.spoolSegments = new Gauge({ name: 'tickfleet_spool_segments', help: 'Spool segment files', registers });
    this.spoolAppended = new Counter({ name: 'tickfleet_spool_appended_total', help: 'Records appended to the spool', registers });
    this.spoolDropped = new Counter({
      name: 'tickfleet_spool_dropped_total',
      help: 'Records dropped because the spool was full (onFull policy)',
      labelNames: ['venue', 'channel'],
      registers,
    });
    this.spoolReplayed = new Counter({ name: 'tickfleet_spool_replayed_total', help: 'Spooled records replayed into the primary sink', registers });
    this.dedupDropped = new Counter({
      name: 'tickfleet_dedup_dropped_total',
      help: 'Records dropped by the in-memory dedup window',
      labelNames: ['venue', 'channel'],
      registers,
    });
  }

  setSinkState(adapter: string, state: SinkState): void {
    this.sinkState.set({ adapter }, STATE_VALUE[state]);
  }
}
