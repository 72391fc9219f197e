import { FREEZE_CAUSES, VENUE_HEALTH_STATES } from '@tickfleet/budget';
import { registerMetric, type CatalogMetric, type Registry } from '@tickfleet/telemetry';
import type { FleetStatus } from './fleet-status.js';

const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'] as const;

/**
 * The dashboard role's fleet gauges (rows of the metric catalog, role `dashboard`), set from one
 * {@link FleetStatus}. Labels are bounded: venue (one per connector), queue state (6), freeze
 * cause (4) and health state (7); no symbol or job id. Every freeze cause and health state is
 * exported for every venue, so a freeze or state that ends reads 0 instead of a vanished series.
 */
export class FleetStatusMetrics {
  private readonly runnable: CatalogMetric<'tickfleet_venue_runnable_units'>;
  private readonly blocked: CatalogMetric<'tickfleet_venue_budget_blocked_units'>;
  private readonly queueUnits: CatalogMetric<'tickfleet_queue_units'>;
  private readonly frozen: CatalogMetric<'tickfleet_venue_frozen'>;
  private readonly health: CatalogMetric<'tickfleet_venue_health'>;
  private readonly gapsOpen: CatalogMetric<'tickfleet_gaps_open'>;
  private readonly liveWorkers: CatalogMetric<'tickfleet_live_workers'>;
  private readonly cursorLag: CatalogMetric<'tickfleet_job_cursor_lag_max_seconds'>;
  private readonly cadenceRatio: CatalogMetric<'tickfleet_job_cursor_lag_cadence_ratio_max'>;

  constructor(registry: Registry) {
    this.runnable = registerMetric(registry, 'tickfleet_venue_runnable_units');
    this.blocked = registerMetric(registry, 'tickfleet_venue_budget_blocked_units');
    this.queueUnits = registerMetric(registry, 'tickfleet_queue_units');
    this.frozen = registerMetric(registry, 'tickfleet_venue_frozen');
    this.health = registerMetric(registry, 'tickfleet_venue_health');
    this.gapsOpen = registerMetric(registry, 'tickfleet_gaps_open');
    this.liveWorkers = registerMetric(registry, 'tickfleet_live_workers');
    this.cursorLag = registerMetric(registry, 'tickfleet_job_cursor_lag_max_seconds');
    this.cadenceRatio = registerMetric(registry, 'tickfleet_job_cursor_lag_cadence_ratio_max');
  }

  /** Replaces every series with the snapshot's, so a venue that went away disappears. */
  apply(status: FleetStatus): void {
    for (const g of [
      this.runnable,
      this.blocked,
      this.queueUnits,
      this.frozen,
      this.health,
      this.gapsOpen,
      this.liveWorkers,
      this.cursorLag,
      this.cadenceRatio,
    ])
      g.reset();
    for (const v of status.venues) {
      const venue = v.venue;
      this.runnable.set({ venue }, v.runnable);
      this.blocked.set({ venue }, v.blocked);
      for (const state of QUEUE_STATES) this.queueUnits.set({ venue, state }, v.queue[state]);
      for (const cause of FREEZE_CAUSES) this.frozen.set({ venue, cause }, v.freeze?.cause === cause ? 1 : 0);
      for (const state of VENUE_HEALTH_STATES) this.health.set({ venue, state }, v.health.state === state ? 1 : 0);
      this.gapsOpen.set({ venue }, v.openGaps);
      if (v.liveWorkers !== null) this.liveWorkers.set({ venue }, v.liveWorkers);
      if (v.cursorLag.maxMs !== null) this.cursorLag.set({ venue }, v.cursorLag.maxMs / 1000);
      if (v.cursorLag.maxCadenceRatio !== null) this.cadenceRatio.set({ venue }, v.cursorLag.maxCadenceRatio);
    }
  }
}
