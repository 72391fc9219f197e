import type { FleetStatus } from './fleet-status.js';

/**
 * The latest fleet snapshot, recomputed at most once per `maxAgeMs` however many browsers poll
 * and scrapers scrape: concurrent callers share one collection, and `onFresh` (the gauges) runs
 * before any of them resumes, so everything served from one collection agrees.
 */
export class StatusCache {
  private last: { atMs: number; status: FleetStatus } | undefined;
  private inflight: Promise<FleetStatus> | undefined;

  constructor(
    private readonly collect: () => Promise<FleetStatus>,
    private readonly maxAgeMs: number,
    private readonly onFresh: (status: FleetStatus) => void = () => undefined,
  ) {}

  current(): Promise<FleetStatus> {
    if (this.last && Date.now() - this.last.atMs < this.maxAgeMs) return Promise.resolve(this.last.status);
    this.inflight ??= this.collect()
      .then((status) => {
        this.onFresh(status);
        this.last = { atMs: Date.now(), status };
        return status;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** Forgets the cached snapshot, so the next call collects (tests, after a change they made). */
  invalidate(): void {
    this.last = undefined;
  }
}
