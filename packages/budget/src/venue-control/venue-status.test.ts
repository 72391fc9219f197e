import { CONNECTOR_STATUSES } from '@tickfleet/core';
import { PAUSED_RETRY_MS, STATUS_EFFECTS, statusSends, venueHold } from './venue-status.js';

const NOW = Date.UTC(2030, 0, 1);

describe('what a connector status lets a venue do', () => {
  it('gives every status its effect: only active sends and is claimed; paused stays served, disabled does not', () => {
    expect(Object.keys(STATUS_EFFECTS).sort()).toEqual([...CONNECTOR_STATUSES].sort());
    expect(STATUS_EFFECTS).toEqual({
      active: { claimsJobs: true, servesQueue: true, sends: true },
      paused: { claimsJobs: false, servesQueue: true, sends: false },
      disabled: { claimsJobs: false, servesQueue: false, sends: false },
    });
    expect(CONNECTOR_STATUSES.filter(statusSends)).toEqual(['active']);
  });

  it('holds a venue for its status, its freeze, or not at all', () => {
    expect(venueHold('active', null, NOW)).toBeNull();
    // A freeze that ended holds nothing.
    expect(venueHold('active', NOW, NOW)).toBeNull();
    expect(venueHold('active', NOW + 60_000, NOW)).toEqual({ reason: 'frozen', untilMs: NOW + 60_000 });
    // A status holds for a while, then the unit looks again (the operator may resume it any time):
    // longer than the budget's own retry, so paused units do not poll the store from held slots.
    for (const status of ['paused', 'disabled'] as const) {
      const hold = venueHold(status, NOW + 60_000, NOW);
      expect(hold).toMatchObject({ reason: status });
      expect(hold!.untilMs).toBeGreaterThan(NOW + PAUSED_RETRY_MS);
    }
    expect(venueHold(null, null, NOW)).toMatchObject({ reason: 'unknown-venue' });
  });
});
