import { CcxtAdapter, type CcxtAdapterOptions } from './ccxt-adapter.js';

/** Kraken spot market data through the CCXT engine (CCXT's `kraken`): OHLC, Depth, AssetPairs. */
export class KrakenAdapter extends CcxtAdapter {
  constructor(options: CcxtAdapterOptions) {
    super('kraken', { ...options, exchange: 'kraken' });
  }
}

/** Coinbase Exchange public market data through the CCXT engine (CCXT's `coinbaseexchange`): candles, book, products. */
export class CoinbaseAdapter extends CcxtAdapter {
  constructor(options: CcxtAdapterOptions) {
    super('coinbase', { ...options, exchange: 'coinbaseexchange' });
  }
}

/** A venue named `ccxt-<exchange id>` is served by the CCXT engine with that exchange (`ccxt-bitstamp`). */
export const CCXT_VENUE_PREFIX = 'ccxt-';
export type CcxtVenue = `ccxt-${string}`;

export function isCcxtVenue(venue: string): venue is CcxtVenue {
  return venue.startsWith(CCXT_VENUE_PREFIX) && /^[a-z0-9]+$/.test(venue.slice(CCXT_VENUE_PREFIX.length));
}
