import { ValidationError } from '@tickfleet/core';
import { AlpacaAdapter, type AlpacaAdapterOptions } from './alpaca/alpaca-adapter.js';
import { BinanceAdapter, type BinanceAdapterOptions } from './binance/binance-adapter.js';
import { FinnhubAdapter, type FinnhubAdapterOptions } from './finnhub/finnhub-adapter.js';
import { FredAdapter, type FredAdapterOptions } from './fred/fred-adapter.js';
import { LimitlessAdapter, type LimitlessAdapterOptions } from './limitless/limitless-adapter.js';
import { PolygonAdapter, type PolygonAdapterOptions } from './polygon/polygon-adapter.js';
import { PolymarketAdapter, type PolymarketAdapterOptions } from './polymarket/polymarket-adapter.js';
import { XetraAdapter, type XetraAdapterOptions } from './xetra/xetra-adapter.js';

/** The adapter class and options of each venue tickfleet has an adapter for. */
export interface VenueAdapters {
  alpaca: { adapter: AlpacaAdapter; options: AlpacaAdapterOptions };
  binance: { adapter: BinanceAdapter; options: BinanceAdapterOptions };
  finnhub: { adapter: FinnhubAdapter; options: FinnhubAdapterOptions };
  fred: { adapter: FredAdapter; options: FredAdapterOptions };
  limitless: { adapter: LimitlessAdapter; options: LimitlessAdapterOptions };
  polygon: { adapter: PolygonAdapter; options: PolygonAdapterOptions };
  polymarket: { adapter: PolymarketAdapter; options: PolymarketAdapterOptions };
  xetra: { adapter: XetraAdapter; options: XetraAdapterOptions };
}

export type AdapterVenue = keyof VenueAdapters;
export const ADAPTER_VENUES: readonly AdapterVenue[] = ['alpaca', 'binance', 'finnhub', 'fred', 'limitless', 'polygon', 'polymarket', 'xetra'];

export function hasVenueAdapter(venue: string): venue is AdapterVenue {
  return (ADAPTER_VENUES as readonly string[]).includes(venue);
}

/**
 * The adapter for `venue`. Typed per venue when the name is a literal; a venue without an adapter
 * fails with a ValidationError naming it.
 */
export function createVenueAdapter<V extends AdapterVenue>(venue: V, options: VenueAdapters[V]['options']): VenueAdapters[V]['adapter'];
export function createVenueAdapter(venue: string, options: VenueAdapters[AdapterVenue]['options']): VenueAdapters[AdapterVenue]['adapter'];
export function createVenueAdapter(venue: string, options: VenueAdapters[AdapterVenue]['options']): VenueAdapters[AdapterVenue]['adapter'] {
  switch (venue) {
    case 'alpaca':
      return new AlpacaAdapter(options);
    case 'binance':
      return new BinanceAdapter(options);
    case 'finnhub':
      return new FinnhubAdapter(options);
    case 'fred':
      return new FredAdapter(options);
    case 'limitless':
      return new LimitlessAdapter(options);
    case 'polygon':
      return new PolygonAdapter(options);
    case 'polymarket':
      return new PolymarketAdapter(options);
    case 'xetra':
      return new XetraAdapter(options);
    default:
      throw new ValidationError('venue', `a venue with an adapter (${ADAPTER_VENUES.join(', ')})`, venue);
  }
}
