import { sleep } from './options.js';

/**
 * Paces one caller's requests to at most `limit` in any sliding window of `windowMs` (real time, as the
 * venue counts it): `take()` returns at once while the window has room, else waits until the oldest
 * request in it has left. Used where a venue has an endpoint limit of its own that the fleet's shared
 * per-venue budget does not model (Polymarket's Gamma `/markets`, see PolymarketAdapter).
 */
export class SlidingWindowPacer {
  /** Send times (performance.now()) of the requests still inside the window, oldest first. */
  private readonly sent: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const now = performance.now();
      while (this.sent.length > 0 && (this.sent[0] ?? 0) <= now - this.windowMs) this.sent.shift();
      if (this.sent.length < this.limit) {
        this.sent.push(now);
        return;
      }
      await sleep(Math.ceil((this.sent[0] ?? now) + this.windowMs - now) + 1, signal);
    }
  }
}
