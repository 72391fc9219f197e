import type { VenueQueues } from './venue-queues.js';

/**
 * Anything that knows a venue's current fleet-wide concurrency, e.g. `FleetVenueControl` from
 * `@tickfleet/budget`. Structural because `@tickfleet/budget` depends on this package (its Lua
 * loader, key names and queue keys), so this package cannot import it back.
 */
export interface ConcurrencySource {
  concurrency(venue: string): Promise<number>;
}

/**
 * Re-reads the venue's current concurrency (AIMD) and applies it as its queue's global
 * concurrency when it differs, returning it: a one-shot re-sync of queue and controller. The
 * worker does not call it; it applies each AIMD step's value as the step is taken (VenueRunner).
 */
export async function applyConcurrency(queues: VenueQueues, source: ConcurrencySource, venue: string): Promise<number> {
  const value = await source.concurrency(venue);
  const current = await queues.globalConcurrency(venue);
  if (current !== value) await queues.setGlobalConcurrency(venue, value);
  return value;
}
