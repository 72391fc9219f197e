import { type Clock, ValidationError } from '@tickfleet/core';

/** A clock that only moves when told to: tests and benchmarks drive time with it. */
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
