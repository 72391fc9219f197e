import { TickfleetError, type TickfleetErrorOptions } from './tickfleet-error.js';

const SAMPLE_CHARS = 200;

/** A response that does not have the documented shape; carries a truncated sample of it. */
export class MalformedPayloadError extends TickfleetError {
  readonly code = 'E_MALFORMED_PAYLOAD' as const;
  readonly retryable = true;
  readonly sample: string;

  constructor(
    readonly venue: string,
    readonly detail: string,
    payload: unknown,
    options?: TickfleetErrorOptions,
  ) {
    const text = typeof payload === 'string' ? payload : safeStringify(payload);
    const sample = text.length > SAMPLE_CHARS ? `${text.slice(0, SAMPLE_CHARS)}…` : text;
    super(`${venue} sent a malformed payload: ${detail}; sample: ${sample}`, options);
    this.sample = sample;
  }
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
