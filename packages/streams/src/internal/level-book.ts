import type { BookLevel } from '@tickfleet/core';

/**
 * A price-level book keyed by the venue's price text (venues repeat a level's price in the same
 * spelling, so the text is a safe key and is what goes to storage). Quantities are the venue's text too;
 * a quantity that reads as zero removes the level.
 */
export class LevelBook {
  readonly bids = new Map<string, string>();
  readonly asks = new Map<string, string>();

  clear(): void {
    this.bids.clear();
    this.asks.clear();
  }

  apply(side: 'bids' | 'asks', levels: ReadonlyArray<readonly [string, string]>): void {
    const map = this[side];
    for (const [price, qty] of levels) {
      if (Number(qty) === 0) map.delete(price);
      else map.set(price, qty);
    }
  }

  /** The best `n` levels of a side: bids highest first, asks lowest first. */
  top(side: 'bids' | 'asks', n: number): BookLevel[] {
    const sign = side === 'bids' ? -1 : 1;
    return [...this[side]].sort((a, b) => sign * (Number(a[0]) - Number(b[0]))).slice(0, n);
  }

  /** Keeps the best `n` levels of each side (Kraken: levels pushed out of the subscribed depth get no delete). */
  truncate(n: number): void {
    for (const side of ['bids', 'asks'] as const) {
      if (this[side].size <= n) continue;
      const keep = new Set(this.top(side, n).map(([p]) => p));
      for (const p of [...this[side].keys()]) if (!keep.has(p)) this[side].delete(p);
    }
  }
}
