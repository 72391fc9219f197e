import type { KeyedEnvelope } from '../records.js';
import type { RetrySettings, SinkAdapter, SinkRetry, SinkState, WriteOptions, WriteResult } from '../sink.js';
import { SinkHealth, type RetryOptions } from './sink-health.js';
import { validateBatch } from './validate-batch.js';

/**
 * What every primary sink shares: validation (malformed records are returned, the rest stored),
 * bounded retries with backoff, and the ok -> unavailable -> degraded -> ok state machine.
 * An adapter only says how to store a batch of valid records and how many of them were new.
 */
export abstract class RetryingSink {
  protected readonly health: SinkHealth;

  protected constructor(adapter: SinkAdapter, options: RetryOptions = {}) {
    this.health = new SinkHealth(adapter, options);
  }

  get state(): SinkState {
    return this.health.state;
  }

  get consecutiveFailures(): number {
    return this.health.consecutiveFailures;
  }

  get retry(): RetrySettings {
    return this.health.settings;
  }

  onStateChange(listener: (state: SinkState) => void): void {
    this.health.onStateChange(listener);
  }

  onRetry(listener: (retry: SinkRetry) => void): void {
    this.health.onRetry(listener);
  }

  async write(records: readonly unknown[], options: WriteOptions = {}): Promise<WriteResult> {
    const { valid, rejected } = validateBatch(records);
    const result = await this.writeKeyed(valid, options);
    return { ...result, rejected };
  }

  async writeKeyed(valid: readonly KeyedEnvelope[], options: WriteOptions = {}): Promise<WriteResult> {
    if (valid.length === 0) return { inserted: 0, duplicates: 0, rejected: [] };
    const inserted = await this.health.run(() => this.storeBatch(valid), options.maxRetries);
    return { inserted, duplicates: valid.length - inserted, rejected: [] };
  }

  /** Stores valid records idempotently; returns how many were not already there. */
  protected abstract storeBatch(valid: readonly KeyedEnvelope[]): Promise<number>;
}
