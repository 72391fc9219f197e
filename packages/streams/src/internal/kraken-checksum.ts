import { crc32 } from 'node:zlib';
import type { BookLevel } from '@tickfleet/core';

/**
 * Kraken's WebSocket v2 book checksum (docs.kraken.com, "Book checksum (WebSocket v2)"): the top 10
 * asks (lowest price first), then the top 10 bids (highest first), each level's price and then its
 * quantity with the `.` and the leading zeros removed, concatenated; the CRC32 of that text, unsigned.
 * Prices and quantities must be the venue's full-precision text (`"0.00000500"`), never re-printed numbers.
 */
export function krakenBookChecksum(asks: readonly BookLevel[], bids: readonly BookLevel[]): number {
  let text = '';
  for (const [p, q] of asks.slice(0, 10)) text += strip(p) + strip(q);
  for (const [p, q] of bids.slice(0, 10)) text += strip(p) + strip(q);
  return crc32(text) >>> 0;
}

function strip(decimal: string): string {
  return decimal.replace('.', '').replace(/^0+/, '');
}
