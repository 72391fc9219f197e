import type { BookSnapshot, Envelope, Trade } from '@tickfleet/core';

/** Book envelope; `serverTimeMs` only when the venue stamped the snapshot itself. */
export function bookEnvelope(
  book: BookSnapshot,
  messageId: string,
  receivedAtMs: number,
  serverTimeMs: number | undefined,
  extra: Record<string, unknown> = {},
): Envelope {
  return {
    v: 1,
    messageId,
    ...(book.sequence === undefined ? {} : { sequence: book.sequence }),
    venue: book.venue,
    channel: 'book',
    symbol: book.symbol,
    ...(serverTimeMs === undefined ? {} : { serverTimeMs }),
    receivedAtMs,
    payload: { ...book, ...extra },
  };
}

export function tradeEnvelope(trade: Trade, messageId: string, receivedAtMs: number, source: Record<string, unknown>): Envelope {
  return {
    v: 1,
    messageId,
    venue: trade.venue,
    channel: 'trades',
    symbol: trade.symbol,
    serverTimeMs: trade.timeMs,
    receivedAtMs,
    payload: { ...trade, source },
  };
}
