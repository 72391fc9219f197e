import { SinkUnavailableError, ValidationError } from '@tickfleet/core';
import type { RetrySettings, SinkRetry, SinkState } from '../sink.js';
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
  private readonly retryListeners: Array<(retry: SinkRetry) => void> = [];
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
    if (!Number.isSafeInteger(this.maxRetries) || this.maxRetries < 0)
      throw new ValidationError('maxRetries', 'a whole number of retries, 0 or more', this.maxRetries);
    if (!Number.isFinite(this.retryBaseMs) || this.retryBaseMs < 0) throw new ValidationError('retryBaseMs', 'a backoff of 0 ms or more', this.retryBaseMs);
    if (!Number.isSafeInteger(this.failuresForDegraded) || this.failuresForDegraded < 1) {
      throw new ValidationError('failuresForDegraded', 'a whole number of batches, 1 or more', this.failuresForDegraded);
    }
  }

  get state(): SinkState {
    return this.current;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  get settings(): RetrySettings {
    return { maxRetries: this.maxRetries, retryBaseMs: this.retryBaseMs, failuresForDegraded: this.failuresForDegraded };
  }

  onStateChange(listener: (state: SinkState) => void): void {
    this.listeners.push(listener);
  }

  /** Called before each backoff wait, with the failed attempt and how long the wait is. */
  onRetry(listener: (retry: SinkRetry) => void): void {
    this.retryListeners.push(listener);
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
        if (n < maxRetries) {
          const delayMs = this.retryBaseMs * 2 ** n;
          for (const l of this.retryListeners) l({ attempt: n, delayMs, error: err });
          await sleep(delayMs);
        }
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
