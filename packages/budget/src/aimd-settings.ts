import type { Connector } from '@tickfleet/core';

/** The AIMD bounds and thresholds of one venue, resolved from its connector. */
export interface AimdLimits {
  /** Floor of the concurrency. @defaultValue 1 */
  min: number;
  /** Ceiling; the connector's `aimd.max` or else its `maxInflight`. */
  max: number;
  /** Clean operation needed before adding one. @defaultValue 30000 */
  increaseAfterMs: number;
  /** Failure ratio above which one is subtracted. @defaultValue 0.2 */
  maxFailureRatio: number;
  /** p95 latency above which one is subtracted. @defaultValue 10000 */
  maxP95LatencyMs: number;
  /**
   * Outcomes needed before the failure ratio or p95 can subtract one, so two early failures do
   * not read as a 100% failure rate. @defaultValue 20
   */
  minSamples: number;
  /** Latencies kept for the p95. @defaultValue 200 */
  sampleSize: number;
  /**
   * One halving per incident: further 429s within this window after a halving (requests that
   * were already in flight across the fleet) only extend the freeze. @defaultValue 1000
   */
  halveCooldownMs: number;
}

export const DEFAULT_AIMD_LIMITS: AimdLimits = {
  min: 1,
  max: 4,
  increaseAfterMs: 30_000,
  maxFailureRatio: 0.2,
  maxP95LatencyMs: 10_000,
  minSamples: 20,
  sampleSize: 200,
  halveCooldownMs: 1000,
};

/** The AIMD limits of a connector: its `aimd` settings, with `max` defaulting to `maxInflight`. */
export function aimdLimitsFor(connector: Pick<Connector, 'maxInflight' | 'aimd'>, overrides: Partial<AimdLimits> = {}): AimdLimits {
  const max = Math.max(1, connector.aimd.max ?? connector.maxInflight);
  const limits: AimdLimits = {
    ...DEFAULT_AIMD_LIMITS,
    min: Math.min(connector.aimd.min, max),
    max,
    increaseAfterMs: connector.aimd.increaseAfterMs,
    maxFailureRatio: connector.aimd.maxFailureRatio,
    maxP95LatencyMs: connector.aimd.maxP95LatencyMs,
    ...overrides,
  };
  return limits;
}
