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
 * One worker's outcome reports for one venue (AIMD and the health record), batched: successes
 * are held for up to `intervalMs` and sent together in one script call; a failure is sent at once
 * with whatever is held (a venue going bad should slow the fleet down now, not a quarter of a
 * second later).
 * Reports go out one at a time, in order. `record` never waits for Redis: the unit that finished
 * is not held up by the bookkeeping of its outcome.
 */
export class OutcomeReporter {
  private readonly intervalMs: number;
  private pending: AimdOutcome[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();

  constructor(private readonly options: OutcomeReporterOptions) {
    this.intervalMs = options.intervalMs ?? AIMD_DEFAULTS.reportIntervalMs;
  }

  /** Adds one finished unit's outcome. */
  record(outcome: AimdOutcome): void {
    this.pending.push(outcome);
    if (!outcome.ok || this.pending.length >= MAX_OUTCOME_BATCH) {
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
    if (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_OUTCOME_BATCH);
      const rest = this.pending.length > 0;
      this.sending = this.sending.then(() => this.send(batch));
      if (rest) return this.flush();
    }
    return this.sending;
  }

  private async send(batch: AimdOutcome[]): Promise<void> {
    try {
      await this.options.onStep(await this.options.control.reportOutcomes(this.options.venue, batch));
    } catch (err) {
      this.options.onError(err);
    }
  }
}
