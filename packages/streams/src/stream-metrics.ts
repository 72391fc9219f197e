import { registerMetric, type Counter, type Gauge, type Registry } from '@tickfleet/telemetry';
import type { StreamSessionStats } from './stream-session.js';

/**
 * The stream series of the worker's `/metrics` (rows of the telemetry metric catalog). Sessions
 * keep cumulative counts in their stats; each stats cycle adds their growth since the last one, so
 * a session reopened on this worker (a new stats object from 0) never moves a counter backwards.
 */
export class StreamMetrics {
  readonly messages: Counter<'venue' | 'stream'>;
  readonly reconnects: Counter<'venue' | 'stream'>;
  readonly gaps: Counter<'venue' | 'stream' | 'outcome'>;
  readonly resyncs: Counter<'venue' | 'stream'>;
  readonly lastMessageAge: Gauge<'venue' | 'stream'>;
  readonly skewP50: Gauge<'venue' | 'stream'>;
  readonly skewP99: Gauge<'venue' | 'stream'>;
  readonly outOfOrder: Counter<'venue' | 'stream'>;

  constructor(registry: Registry) {
    this.messages = registerMetric(registry, 'tickfleet_stream_messages_total');
    this.reconnects = registerMetric(registry, 'tickfleet_stream_reconnects_total');
    this.gaps = registerMetric(registry, 'tickfleet_stream_gaps_total');
    this.resyncs = registerMetric(registry, 'tickfleet_stream_resyncs_total');
    this.lastMessageAge = registerMetric(registry, 'tickfleet_stream_last_message_age_seconds');
    this.skewP50 = registerMetric(registry, 'tickfleet_stream_skew_p50_seconds');
    this.skewP99 = registerMetric(registry, 'tickfleet_stream_skew_p99_seconds');
    this.outOfOrder = registerMetric(registry, 'tickfleet_stream_out_of_order_total');
  }

  /** Adds the growth of `now` over `before` (the same session's previous stats, or none) to the counters and sets the gauges. */
  observe(venue: string, stream: string, now: StreamSessionStats, before: StreamSessionStats | undefined): void {
    const labels = { venue, stream };
    const grow = (counter: Counter<'venue' | 'stream'>, pick: (s: StreamSessionStats) => number): void => {
      const d = pick(now) - (before ? pick(before) : 0);
      if (d > 0) counter.inc(labels, d);
    };
    grow(this.messages, (s) => s.messages);
    grow(this.reconnects, (s) => s.reconnects);
    grow(this.resyncs, (s) => s.resyncs);
    grow(this.outOfOrder, (s) => s.timeQuality.outOfOrder);
    for (const [outcome, pick] of [
      ['found', (s: StreamSessionStats) => s.gapsFound],
      ['healed', (s: StreamSessionStats) => s.gapsHealed],
      ['unhealed', (s: StreamSessionStats) => s.gapsUnhealed],
    ] as const) {
      const d = pick(now) - (before ? pick(before) : 0);
      if (d > 0) this.gaps.inc({ ...labels, outcome }, d);
    }
    if (now.lastMessageAgeMs !== null) this.lastMessageAge.set(labels, now.lastMessageAgeMs / 1000);
    const { skewP50Ms, skewP99Ms } = now.timeQuality;
    if (skewP50Ms !== null) this.skewP50.set(labels, skewP50Ms / 1000);
    if (skewP99Ms !== null) this.skewP99.set(labels, skewP99Ms / 1000);
  }

  /** Drops the gauges of a stream this worker no longer holds (its new holder reports them); counters stay, as Prometheus expects. */
  forget(venue: string, stream: string): void {
    this.lastMessageAge.remove({ venue, stream });
    this.skewP50.remove({ venue, stream });
    this.skewP99.remove({ venue, stream });
  }
}
