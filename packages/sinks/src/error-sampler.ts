import { systemClock, type Clock, type ValidationError } from '@tickfleet/core';
import type { ErrorSample } from './sink.js';
import { PIPELINE_DEFAULTS } from './sink-defaults.js';

const SAMPLE_CHARS = 500;

export interface ErrorSamplerOptions {
  /** Samples kept per venue and channel per minute; the rest are only counted. @defaultValue {@link PIPELINE_DEFAULTS.errorSamplesPerMinute} */
  perMinute?: number;
  clock?: Clock;
}

/** Picks which malformed records go to the errors stream, so a broken feed cannot flood it. */
export class ErrorSampler {
  private readonly perMinute: number;
  private readonly clock: Clock;
  private minute = -1;
  private readonly taken = new Map<string, number>();

  constructor(options: ErrorSamplerOptions = {}) {
    this.perMinute = options.perMinute ?? PIPELINE_DEFAULTS.errorSamplesPerMinute;
    this.clock = options.clock ?? systemClock;
  }

  /** A sample of `record`, or undefined when its venue/channel already used this minute's quota. */
  sample(record: unknown, error: ValidationError): ErrorSample | undefined {
    const now = this.clock.now();
    const minute = Math.floor(now / 60_000);
    if (minute !== this.minute) {
      this.minute = minute;
      this.taken.clear();
    }
    const venue = field(record, 'venue');
    const channel = field(record, 'channel');
    const id = `${venue}\u0000${channel}`;
    const n = this.taken.get(id) ?? 0;
    if (n >= this.perMinute) return undefined;
    this.taken.set(id, n + 1);
    let text: string;
    try {
      text = JSON.stringify(record) ?? String(record);
    } catch {
      text = String(record);
    }
    return {
      atMs: now,
      venue,
      channel,
      field: error.field,
      message: error.message,
      sample: text.length > SAMPLE_CHARS ? `${text.slice(0, SAMPLE_CHARS)}…` : text,
    };
  }
}

function field(record: unknown, name: string): string | null {
  if (record === null || typeof record !== 'object') return null;
  const v = (record as Record<string, unknown>)[name];
  return typeof v === 'string' ? v.slice(0, 64) : null;
}
