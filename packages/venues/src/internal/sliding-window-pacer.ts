import { sleep } from './options.js';

/** How often a caller waiting on a request still in flight looks again. */
const IN_FLIGHT_POLL_MS = 10;

/**
 * Paces one caller's requests to at most `limit` in any sliding window of `windowMs`, as the venue
 * counts them: `run(fn)` starts `fn` at once while the window has room, else waits until the oldest
 * request in it has left. A request occupies the window from its start until `windowMs` after its
 * answer: the venue counts its arrival, which lies between the two, so counting from the answer keeps
 * the venue's count within the limit whatever the network delay (counting from the send would not).
 * Used where a venue has an endpoint limit of its own that the fleet's shared per-venue budget does not
 * model (Polymarket's Gamma `/markets`, see PolymarketAdapter).
 */
export class SlidingWindowPacer {
  /** Requests in the window, oldest first: `at` is when the answer came (Infinity while in flight). */
  private readonly slots: Array<{ at: number }> = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const slot = { at: Number.POSITIVE_INFINITY };
    for (;;) {
      const now = performance.now();
      while (this.slots.length > 0 && (this.slots[0]?.at ?? 0) <= now - this.windowMs) this.slots.shift();
      if (this.slots.length < this.limit) break;
      const oldest = this.slots[0]?.at ?? now;
      await sleep(Number.isFinite(oldest) ? Math.ceil(oldest + this.windowMs - now) + 1 : IN_FLIGHT_POLL_MS, signal);
    }
    this.slots.push(slot);
    try {
      return await fn();
    } finally {
      slot.at = performance.now();
    }
  }
}
