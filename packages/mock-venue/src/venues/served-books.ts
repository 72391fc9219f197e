/** One order-book snapshot an emulation answered: when (its clock), of which pair (`BTC/USD`), at which model tick. */
export interface ServedBook {
  atMs: number;
  symbol: string;
  tick: number;
}

/** Served snapshots kept, newest last: enough for any test's run, bounded for a long demo. */
const SERVED_BOOKS_KEPT = 100_000;

/** The ground truth of the book polls a REST emulation answered since reset. */
export class ServedBooks {
  private log: ServedBook[] = [];

  add(book: ServedBook): void {
    if (this.log.length >= SERVED_BOOKS_KEPT) this.log.splice(0, this.log.length - SERVED_BOOKS_KEPT + 1);
    this.log.push(book);
  }

  all(): readonly ServedBook[] {
    return this.log;
  }

  reset(): void {
    this.log = [];
  }
}
