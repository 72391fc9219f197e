import { AIMD_DEFAULTS, AimdSettings, DEFAULT_MAX_INFLIGHT, defaultAimdMin, defaultAimdStart, WORKER_LIVENESS_MS, type Connector } from '@tickfleet/core';

/** The AIMD bounds and thresholds of one venue, resolved from its connector. */
export interface AimdLimits {
  /** Floor of the concurrency. @defaultValue AIMD_DEFAULTS.min */
  min: number;
  /** Ceiling; the connector's `aimd.max` or else its `maxInflight`. */
  max: number;
  /** Minimum interval between two adjustments. @defaultValue AIMD_DEFAULTS.increaseAfterMs */
  increaseAfterMs: number;
  /** No 429 for this long before an increase. @defaultValue AIMD_DEFAULTS.stableMs */
  stableMs: number;
  /** Failure ratio above which one is subtracted; an increase needs less than half. @defaultValue AIMD_DEFAULTS.maxFailureRatio */
  maxFailureRatio: number;
  /** p95 latency above which one is subtracted. @defaultValue AIMD_DEFAULTS.maxP95LatencyMs */
  maxP95LatencyMs: number;
  /** p95 latency an increase needs to be under. @defaultValue AIMD_DEFAULTS.lowP95LatencyMs */
  lowP95LatencyMs: number;
  /** A new fleet, and a restarted one, starts at `min` (true) or `max` (false): the connector's `aimd.start`. @defaultValue DEFAULT_AIMD_LIMITS.startFromFloor */
  startFromFloor: boolean;
  /** No live worker for this long is a fleet restart (back to `start`); 0 never. @defaultValue AIMD_DEFAULTS.restartAfterMs */
  restartAfterMs: number;
  /**
   * Outcomes a window needs before its failure ratio or p95 can change the value (subtract one,
   * or add one at the end of an interval), so two early failures do not read as a 100% failure
   * rate and a p95 is never taken over a handful of units. @defaultValue AIMD_DEFAULTS.minSamples
   */
  minSamples: number;
  /** Latencies kept for the p95. @defaultValue AIMD_DEFAULTS.sampleSize */
  sampleSize: number;
  /**
   * One halving per incident: further 429s within this window after a halving (requests that
   * were already in flight across the fleet) only extend the freeze. @defaultValue AIMD_DEFAULTS.halveCooldownMs
   */
  halveCooldownMs: number;
}

/** The limits of a venue without a connector (core's AIMD_DEFAULTS, up to the default in-flight cap, starting at it). */
export const DEFAULT_AIMD_LIMITS: AimdLimits = {
  min: AIMD_DEFAULTS.min,
  max: DEFAULT_MAX_INFLIGHT,
  increaseAfterMs: AIMD_DEFAULTS.increaseAfterMs,
  stableMs: AIMD_DEFAULTS.stableMs,
  maxFailureRatio: AIMD_DEFAULTS.maxFailureRatio,
  maxP95LatencyMs: AIMD_DEFAULTS.maxP95LatencyMs,
  lowP95LatencyMs: AIMD_DEFAULTS.lowP95LatencyMs,
  startFromFloor: false,
  restartAfterMs: AIMD_DEFAULTS.restartAfterMs,
  minSamples: AIMD_DEFAULTS.minSamples,
  sampleSize: AIMD_DEFAULTS.sampleSize,
  halveCooldownMs: AIMD_DEFAULTS.halveCooldownMs,
};

/**
 * The AIMD limits of a connector: its `aimd` settings, with `max` defaulting to `maxInflight`.
 * Settings stored by an older version lack the newer fields: their defaults are filled in here;
 * a restart period stored before it had a minimum is raised to it.
 */
export function aimdLimitsFor(
  connector: Pick<Connector, 'venue' | 'maxInflight'> & { aimd: Partial<AimdSettings> },
  overrides: Partial<AimdLimits> = {},
): AimdLimits {
  const stored = connector.aimd.restartAfterMs;
  const aimd = AimdSettings.parse(
    stored === undefined || stored === 0 ? connector.aimd : { ...connector.aimd, restartAfterMs: Math.max(WORKER_LIVENESS_MS, stored) },
  );
  const max = Math.max(1, aimd.max ?? connector.maxInflight);
  const min = Math.min(aimd.min ?? defaultAimdMin(connector.venue), max);
  const limits: AimdLimits = {
    ...DEFAULT_AIMD_LIMITS,
    min,
    max,
    increaseAfterMs: aimd.increaseAfterMs,
    stableMs: aimd.stableMs,
    maxFailureRatio: aimd.maxFailureRatio,
    maxP95LatencyMs: aimd.maxP95LatencyMs,
    lowP95LatencyMs: aimd.lowP95LatencyMs ?? Math.min(DEFAULT_AIMD_LIMITS.lowP95LatencyMs, aimd.maxP95LatencyMs),
    startFromFloor: (aimd.start ?? defaultAimdStart(connector.venue)) === 'floor',
    restartAfterMs: aimd.restartAfterMs,
    ...overrides,
  };
  return limits;
}

/** The concurrency a new or restarted fleet starts at. */
export function startConcurrency(limits: AimdLimits): number {
  return limits.startFromFloor ? limits.min : limits.max;
}
