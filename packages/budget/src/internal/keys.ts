import { parseOrThrow, ValidationError, VenueName } from '@tickfleet/core';

/** Default key prefix, the same as the venue queues' so a venue's records share its slot. */
export const DEFAULT_PREFIX = 'tickfleet';

/**
 * `<prefix>:venue:{<venue>}:<suffix>`: per-venue records under the venue's Redis Cluster hash tag
 * (the tag of its BullMQ queue `{<venue>}`), outside BullMQ's own key space.
 */
export function venueRecordKey(prefix: string, venue: string, suffix: string): string {
  if (!/^[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)*$/.test(prefix)) {
    throw new ValidationError('prefix', 'a Redis key prefix of [A-Za-z0-9_.-] segments joined by ":" (no braces)', prefix);
  }
  parseOrThrow(VenueName, venue, 'venue');
  return `${prefix}:venue:{${venue}}:${suffix}`;
}
