import { SinkUnavailableError } from '@tickfleet/core';
import type { SinkState } from '../sink.js';
import { sleep } from './sleep.js';
import { SINK_DEFAULTS } from '../sink-defaults.js';

export interface RetryOptions {
  /** Retries after the first attempt of a batch. @defaultValue {@link SINK_DEFAULTS.maxRetries} */
  maxRetries?: number;
  /** First backoff; attempt n waits `retryBaseMs * 2^n`. @defaultValue {@link SINK_DEFAULTS.retryBaseMs} */
  retryBaseMs?: number;
  /** Consecutive exhausted batches that turn `unavailable` into `degraded`. @defaultValue {@link SINK_DEFAULTS.failuresForDegraded} */
  failuresForDegraded?: number;
}

/** Bounded retry with exponential backoff, and the sink state machine it drives. */
export class SinkHealth {
  private current: SinkState = 'ok';
  private failures = 0;
  private readonly listeners: Array<(state: SinkState) => void> = [];
  readonly maxRetries: number;
  readonly retryBaseMs: number;
  readonly failuresForDegraded: number;

  constructor(
    private readonly adapter: string,
    options: RetryOptions = {},
  ) {
    this.maxRetries = options.maxRetries ?? SINK_DEFAULTS.maxRetries;
    this.retryBaseMs = options.retryBaseMs ?? SINK_DEFAULTS.retryBaseMs;
    this.failuresForDegraded = options.failuresForDegraded ?? SINK_DEFAULTS.failuresForDegraded;
  }

  get state(): SinkState {
    return this.current;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  onStateChange(listener: (state: SinkState) => void): void {
    this.listeners.push(listener);
  }

  async run<T>(attempt: () => Promise<T> | T, maxRetries = this.maxRetries): Promise<T> {
    let lastError: unknown;
    for (let n = 0; n <= maxRetries; n++) {
      try {
        const result = await attempt();
        this.failures = 0;
        this.set('ok');
        return result;
      } catch (err) {
        lastError = err;
        if (n < maxRetries) await sleep(this.retryBaseMs * 2 ** n);
      }
    }
    this.failures += 1;
    this.set(this.failures >= this.failuresForDegraded ? 'degraded' : 'unavailable');
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    throw new SinkUnavailableError(this.adapter, maxRetries + 1, reason, undefined, { cause: lastError });
  }

  private set(state: SinkState): void {
    if (state === this.current) return;
    this.current = state;
    for (const l of this.listeners) l(state);
  }
}
