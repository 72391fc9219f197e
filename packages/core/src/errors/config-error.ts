import { TickfleetError } from './tickfleet-error.js';

/** A bad environment variable or configuration value, detected at process start. */
export class ConfigError extends TickfleetError {
  readonly code = 'E_CONFIG' as const;
  readonly retryable = false;

  constructor(
    readonly variable: string,
    readonly expected: string,
  ) {
    super(`invalid configuration ${variable}: expected ${expected}`);
  }
}
