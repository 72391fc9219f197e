/**
 * The host scenarios' own reads of the store host (the end checks), retried: on 2 loaded cores the
 * wire server can miss the driver's timeouts. An attempt must have no effect outside itself, since
 * a failed one is run again from the start: a read that appended to a list kept across attempts
 * counted every candle read before the failure twice.
 */
import { openSink, type Sink } from '@tickfleet/sinks';

export const STORE_READ_DEFAULTS = {
  tries: 4,
  pauseMs: 2000,
  /**
   * Minutes read per query: under the reader's page of 1,000, so each query is one page. The wire
   * server sorts every match of a query: one query over a 100,000-candle range sorted 100,000
   * documents for each page of it (189 s to read 230,400 candles at load ~25).
   */
  spanMinutes: 999,
} as const;

export interface RetryOptions {
  tries?: number;
  pauseMs?: number;
  /** Called with each failure that is retried. */
  onRetry?: (err: Error) => void;
}

const RETRIED = /MongoServerSelectionError|MongoNetwork|PoolCleared|StoreUnavailable|timed out/;

/** `attempt` until it succeeds, `tries` times at most, for the errors of an unreachable or slow server only. */
export async function retried<T>(attempt: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const tries = opts.tries ?? STORE_READ_DEFAULTS.tries;
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i >= tries || !RETRIED.test(`${(err as Error).name} ${(err as Error).message}`)) throw err;
      opts.onRetry?.(err as Error);
      await new Promise((r) => setTimeout(r, opts.pauseMs ?? STORE_READ_DEFAULTS.pauseMs));
    }
  }
}

/** `fn` on a fresh sink connection, retried as a whole. */
export function withSink<T>(sinkUrl: string, fn: (sink: Sink) => Promise<T>, opts?: RetryOptions): Promise<T> {
  return retried(async () => {
    const sink = await openSink(sinkUrl);
    try {
      return await fn(sink);
    } finally {
      await sink.close();
    }
  }, opts);
}

/** Open times of the stored 1m candles of one series in [fromMs, toMs), as read (duplicates included). */
export function storedOpenTimes(sinkUrl: string, q: { venue: string; symbol: string; fromMs: number; toMs: number }, opts?: RetryOptions): Promise<number[]> {
  return withSink(
    sinkUrl,
    async (sink) => {
      // Per attempt: a retried attempt starts over with an empty list.
      const stored: number[] = [];
      const span = STORE_READ_DEFAULTS.spanMinutes * 60_000;
      for (let from = q.fromMs; from < q.toMs; from += span) {
        const range = { venue: q.venue, symbol: q.symbol, timeframe: '1m' as const, fromMs: from, toMs: Math.min(q.toMs, from + span) };
        for await (const c of sink.reader!.streamCandles(range)) stored.push(c.openTime);
      }
      return stored;
    },
    opts,
  );
}
