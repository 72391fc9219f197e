import type { LatencySummary } from '../stats.js';

const LATENCY_SAMPLES = 4096;

/** Plain counters of one venue plus a ring of recent latencies; the limiter keeps the window accounting. */
export class VenueCounters {
  requests = 0;
  overLimitRequests = 0;
  responses2xx = 0;
  responses4xx = 0;
  responses429 = 0;
  responses418 = 0;
  responses5xx = 0;
  delayedRequests = 0;
  timeouts = 0;
  outageDrops = 0;
  malformedResponses = 0;
  stormResponses = 0;
  /** Requests accepted and not yet answered (or dropped), the most of them at once, and arrivals refused for it. */
  inFlight = 0;
  maxInFlight = 0;
  concurrencyRejected = 0;
  private readonly latencies = new Float64Array(LATENCY_SAMPLES);
  private latencyCount = 0;

  countStatus(status: number): void {
    if (status === 429) this.responses429 += 1;
    else if (status === 418) this.responses418 += 1;
    else if (status >= 500) this.responses5xx += 1;
    else if (status >= 400) this.responses4xx += 1;
    else if (status >= 200 && status < 300) this.responses2xx += 1;
  }

  recordLatency(ms: number): void {
    this.latencies[this.latencyCount % LATENCY_SAMPLES] = ms;
    this.latencyCount += 1;
  }

  latency(): LatencySummary {
    const n = Math.min(this.latencyCount, LATENCY_SAMPLES);
    const sorted = Array.from(this.latencies.subarray(0, n)).sort((a, b) => a - b);
    const at = (q: number): number => (n === 0 ? 0 : round2(sorted[Math.min(n - 1, Math.floor(q * n))] ?? 0));
    return { count: n, p50Ms: at(0.5), p90Ms: at(0.9), p99Ms: at(0.99), maxMs: n === 0 ? 0 : round2(sorted[n - 1] ?? 0) };
  }
}

function round2(ms: number): number {
  return Math.round(ms * 100) / 100;
}
