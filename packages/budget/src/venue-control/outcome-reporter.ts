import { AIMD_DEFAULTS } from '@tickfleet/core';
import type { AimdOutcome, ControlStep, FleetVenueControl } from './fleet-venue-control.js';
import { MAX_OUTCOME_BATCH } from './fleet-venue-control.js';

export interface OutcomeReporterOptions {
  control: Pick<FleetVenueControl, 'reportOutcomes'>;
  venue: string;
  /**
   * How long a success waits to be reported with the ones after it. AIMD acts on windows of
   * seconds (`increaseAfterMs`), so a few hundred ms of delay changes no decision, and a worker
   * finishing hundreds of units a second sends a few reports instead of one Redis script per unit.
   * @defaultValue AIMD_DEFAULTS.reportIntervalMs
   */
  intervalMs?: number;
  /** Called with every step the venue's control answers (the caller applies a changed concurrency). */
  onStep(step: ControlStep): Promise<void> | void;
  /** Called when a report could not be delivered (its outcomes are dropped: AIMD misses a few samples). */
  onError(err: unknown): void;
}

/**
 * One worker's outcome reports for one venue (AIMD and the health record), batched: unit
 * successes and request latencies are held for up to `intervalMs` and sent together in one script
 * call; a failure is sent at once with whatever is held (a venue going bad should slow the fleet
 * down now, not a quarter of a second later). Request latencies are reported as the requests
 * answer, so a unit that runs for minutes feeds AIMD's p95 while it runs.
 * Reports go out one at a time, in order. `record` never waits for Redis: the unit that finished
 * is not held up by the bookkeeping of its outcome.
 */
export class OutcomeReporter {
  private readonly intervalMs: number;
  private pending: AimdOutcome[] = [];
  private pendingLatencies: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();

  constructor(private readonly options: OutcomeReporterOptions) {
    this.intervalMs = options.intervalMs ?? AIMD_DEFAULTS.reportIntervalMs;
  }

  /** Adds one finished unit's outcome. */
  record(outcome: AimdOutcome): void {
    this.pending.push(outcome);
    this.held(!outcome.ok || this.pending.length >= MAX_OUTCOME_BATCH);
  }

  /** Adds the latency of one answered request (any status, or a transport failure) of the venue. */
  request(latencyMs: number): void {
    this.pendingLatencies.push(latencyMs);
    this.held(this.pendingLatencies.length >= MAX_OUTCOME_BATCH);
  }

  private held(now: boolean): void {
    if (now) {
      void this.flush();
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Sends everything held now; resolves when every report sent so far has been answered. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.pending.length > 0 || this.pendingLatencies.length > 0) {
      // At most MAX_OUTCOME_BATCH outcomes, and as many latencies with the outcomes' own.
      const batch = this.pending.splice(0, MAX_OUTCOME_BATCH);
      const carried = batch.reduce((n, o) => n + (o.latencyMs === undefined ? 0 : 1), 0);
      const latencies = this.pendingLatencies.splice(0, MAX_OUTCOME_BATCH - carried);
      this.sending = this.sending.then(() => this.send(batch, latencies));
    }
    return this.sending;
  }

  private async send(batch: AimdOutcome[], latencies: number[]): Promise<void> {
    try {
      await this.options.onStep(await this.options.control.reportOutcomes(this.options.venue, batch, latencies));
    } catch (err) {
      this.options.onError(err);
    }
  }
}
