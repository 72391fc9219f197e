import { ValidationError } from '@tickfleet/core';
import { AlpacaAdapter } from './alpaca/alpaca-adapter.js';
import { BinanceAdapter } from './binance/binance-adapter.js';
import { CcxtAdapter, type CcxtAdapterOptions } from './ccxt/ccxt-adapter.js';
import { CCXT_VENUE_PREFIX, CoinbaseAdapter, isCcxtVenue, KrakenAdapter, type CcxtVenue } from './ccxt/ccxt-venues.js';
import { FinnhubAdapter } from './finnhub/finnhub-adapter.js';
import { FredAdapter } from './fred/fred-adapter.js';
import { LimitlessAdapter } from './limitless/limitless-adapter.js';
import { PolygonAdapter } from './polygon/polygon-adapter.js';
import { PolymarketAdapter } from './polymarket/polymarket-adapter.js';
import { XetraAdapter } from './xetra/xetra-adapter.js';

/** The adapter class of each venue tickfleet has an adapter for: a new venue is one line here. */
const ADAPTER_CLASSES = {
  alpaca: AlpacaAdapter,
  binance: BinanceAdapter,
  coinbase: CoinbaseAdapter,
  finnhub: FinnhubAdapter,
  fred: FredAdapter,
  kraken: KrakenAdapter,
  limitless: LimitlessAdapter,
  polygon: PolygonAdapter,
  polymarket: PolymarketAdapter,
  xetra: XetraAdapter,
};
type AdapterClasses = typeof ADAPTER_CLASSES;

/** The adapter class and options of each venue tickfleet has an adapter for. */
export type VenueAdapters = {
  [V in keyof AdapterClasses]: { adapter: InstanceType<AdapterClasses[V]>; options: ConstructorParameters<AdapterClasses[V]>[0] };
};

export type AdapterVenue = keyof VenueAdapters;
export const ADAPTER_VENUES: readonly AdapterVenue[] = Object.freeze(Object.keys(ADAPTER_CLASSES) as AdapterVenue[]);

/** Whether tickfleet can serve `venue`: a venue with an adapter, or `ccxt-<exchange>` (the CCXT engine). */
export function hasVenueAdapter(venue: string): venue is AdapterVenue | CcxtVenue {
  return (ADAPTER_VENUES as readonly string[]).includes(venue) || isCcxtVenue(venue);
}

type AnyAdapterOptions = VenueAdapters[AdapterVenue]['options'] | CcxtAdapterOptions;
type AnyAdapter = VenueAdapters[AdapterVenue]['adapter'] | CcxtAdapter;

/**
 * The adapter for `venue`. Typed per venue when the name is a literal; a venue without an adapter
 * fails with a ValidationError naming it.
 */
export function createVenueAdapter<V extends AdapterVenue>(venue: V, options: VenueAdapters[V]['options']): VenueAdapters[V]['adapter'];
export function createVenueAdapter(venue: string, options: AnyAdapterOptions): AnyAdapter;
export function createVenueAdapter(venue: string, options: AnyAdapterOptions): AnyAdapter {
  if (!hasVenueAdapter(venue))
    throw new ValidationError('venue', `a venue with an adapter (${ADAPTER_VENUES.join(', ')}) or ${CCXT_VENUE_PREFIX}<exchange>`, venue);
  if (isCcxtVenue(venue)) return new CcxtAdapter(venue, { ...options, exchange: venue.slice(CCXT_VENUE_PREFIX.length) });
  // Any adapter accepts any adapter options: each needs only baseUrl and reads only its own.
  const Adapter = ADAPTER_CLASSES[venue] as new (options: AnyAdapterOptions) => AnyAdapter;
  return new Adapter(options);
}
