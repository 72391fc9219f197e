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
