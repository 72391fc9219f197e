import type { VenueQueues } from './venue-queues.js';

/**
 * Anything that knows a venue's current fleet-wide concurrency, e.g. `FleetVenueControl` from
 * `@tickfleet/budget`. Structural, so queues and budget need not depend on each other.
 */
export interface ConcurrencySource {
  concurrency(venue: string): Promise<number>;
}

/**
 * Applies the venue's current concurrency (AIMD) as its queue's global concurrency, and returns
 * it. Call after a change reported by the controller, and at worker start.
 */
export async function applyConcurrency(queues: VenueQueues, source: ConcurrencySource, venue: string): Promise<number> {
  const value = await source.concurrency(venue);
  const current = await queues.globalConcurrency(venue);
  if (current !== value) await queues.setGlobalConcurrency(venue, value);
  return value;
}
