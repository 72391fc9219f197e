import { normalizeUniverseSymbols, parseOrThrow, UniverseName, VenueName } from '@tickfleet/core';

/** A universe key and its members, validated the same way by every adapter. */
export function validateUniverse(venue: string, name: string, symbols: readonly string[]): { venue: string; name: string; symbols: string[] } {
  return {
    venue: parseOrThrow(VenueName, venue, 'venue'),
    name: parseOrThrow(UniverseName, name, 'universe name'),
    symbols: normalizeUniverseSymbols(symbols),
  };
}
