/**
 * One Kraken spot pair as `AssetPairs` describes it (docs.kraken.com, "Get Tradable Asset Pairs"):
 * its REST key (`XXBTZUSD`), `altname`, WebSocket v1 `wsname`, asset ids, and `pair_decimals` (the
 * price precision every endpoint prints). `symbol` is the WebSocket v2 / tickfleet name.
 */
export interface KrakenPair {
  symbol: string;
  id: string;
  altname: string;
  wsname: string;
  base: string;
  quote: string;
  pairDecimals: number;
  lotDecimals: number;
  costDecimals: number;
  ordermin: string;
  costmin: string;
  /** A plausible price level, so `pair_decimals` prints sensible prices (BTC/USD at 1 decimal). */
  basePrice: number;
}

/** The pairs the Kraken emulation lists, with the precisions Kraken publishes for them. */
export const KRAKEN_PAIRS: readonly KrakenPair[] = [
  pair('BTC/USD', 'XXBTZUSD', 'XBTUSD', 'XBT/USD', 'XXBT', 'ZUSD', 1, '0.00005', 60_000),
  pair('ETH/USD', 'XETHZUSD', 'ETHUSD', 'ETH/USD', 'XETH', 'ZUSD', 2, '0.002', 3000),
  pair('SOL/USD', 'SOLUSD', 'SOLUSD', 'SOL/USD', 'SOL', 'ZUSD', 2, '0.02', 150),
  pair('XRP/USD', 'XXRPZUSD', 'XRPUSD', 'XRP/USD', 'XXRP', 'ZUSD', 5, '2', 0.6),
  pair('ADA/USD', 'ADAUSD', 'ADAUSD', 'ADA/USD', 'ADA', 'ZUSD', 6, '5', 0.45),
  pair('DOGE/USD', 'XDGUSD', 'XDGUSD', 'XDG/USD', 'XXDG', 'ZUSD', 7, '15', 0.15),
  pair('DOT/USD', 'DOTUSD', 'DOTUSD', 'DOT/USD', 'DOT', 'ZUSD', 4, '0.6', 7),
  pair('LTC/USD', 'XLTCZUSD', 'LTCUSD', 'LTC/USD', 'XLTC', 'ZUSD', 2, '0.05', 80),
  pair('LINK/USD', 'LINKUSD', 'LINKUSD', 'LINK/USD', 'LINK', 'ZUSD', 5, '0.2', 15),
  pair('BTC/EUR', 'XXBTZEUR', 'XBTEUR', 'XBT/EUR', 'XXBT', 'ZEUR', 1, '0.00005', 55_000),
  pair('ETH/EUR', 'XETHZEUR', 'ETHEUR', 'ETH/EUR', 'XETH', 'ZEUR', 2, '0.002', 2800),
  pair('ETH/BTC', 'XETHXXBT', 'ETHXBT', 'ETH/XBT', 'XETH', 'XXBT', 5, '0.002', 0.05),
];

function pair(
  symbol: string,
  id: string,
  altname: string,
  wsname: string,
  base: string,
  quote: string,
  pairDecimals: number,
  ordermin: string,
  basePrice: number,
): KrakenPair {
  return {
    symbol,
    id,
    altname,
    wsname,
    base,
    quote,
    pairDecimals,
    lotDecimals: 8,
    costDecimals: quote === 'XXBT' ? 10 : 5,
    ordermin,
    costmin: '0.5',
    basePrice,
  };
}

const BY_KEY = new Map(KRAKEN_PAIRS.map((p) => [p.symbol.replace('/', ''), p]));

/** The Kraken pair whose canonical key (`BTCUSD`) is `key`, if Kraken lists it. */
export function krakenPairOfKey(key: string): KrakenPair | undefined {
  return BY_KEY.get(key);
}
