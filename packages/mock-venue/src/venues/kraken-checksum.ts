import { crc32 } from 'node:zlib';

/** A book level as Kraken prints it: price and quantity as decimal text in the pair's precision. */
export type KrakenLevelText = readonly [price: string, qty: string];

/**
 * Kraken's WebSocket v2 book checksum (docs.kraken.com, "Book checksum (WebSocket v2)"): for the top 10
 * asks (lowest first), then the top 10 bids (highest first), the price and then the quantity with the
 * decimal point and leading zeros removed, concatenated; CRC32 of that text as an unsigned 32-bit number.
 * Prices and quantities must be the venue's full-precision text (`"0.10000000"`, not `0.1`).
 */
export function krakenChecksum(asks: readonly KrakenLevelText[], bids: readonly KrakenLevelText[]): number {
  let text = '';
  for (const [p, q] of asks.slice(0, 10)) text += strip(p) + strip(q);
  for (const [p, q] of bids.slice(0, 10)) text += strip(p) + strip(q);
  return crc32(text) >>> 0;
}

function strip(decimal: string): string {
  return decimal.replace('.', '').replace(/^0+/, '');
}
