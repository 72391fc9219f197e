import { ValidationError } from './errors/validation-error.js';

/** Wall-clock and monotonic time, injectable so tests control time. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Milliseconds from an arbitrary origin that never goes backwards; for measuring durations. */
  monotonic(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
};

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  private wallMs: number;
  private monoMs = 0;

  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.wallMs = startMs;
  }

  now(): number {
    return this.wallMs;
  }

  monotonic(): number {
    return this.monoMs;
  }

  advance(ms: number): void {
    if (ms < 0) throw new ValidationError('ms', 'a non-negative advance (ManualClock cannot go backwards)', ms);
    this.wallMs += ms;
    this.monoMs += ms;
  }

  set(wallMs: number): void {
    this.wallMs = wallMs;
  }
}
