import { candleKey, type BookSnapshot, type Candle, type Envelope, type Trade } from '@tickfleet/core';

/** Candle envelope: the candle key is the message id, so re-fetching a candle dedups structurally. */
export function candleEnvelope(candle: Candle, receivedAtMs: number, serverTimeMs?: number): Envelope {
  return {
    v: 1,
    messageId: candleKey(candle),
    venue: candle.venue,
    channel: 'candles',
    symbol: candle.symbol,
    ...(serverTimeMs === undefined ? {} : { serverTimeMs }),
    receivedAtMs,
    payload: { ...candle },
  };
}

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
