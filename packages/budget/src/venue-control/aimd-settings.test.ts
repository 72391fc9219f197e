import { AIMD_DEFAULTS, Connector, DEFAULT_BOOK_COOLDOWN, FREEZE_DEFAULTS } from '@tickfleet/core';
import { aimdLimitsFor, DEFAULT_AIMD_LIMITS } from './aimd-settings.js';
import { freezeEscalationFor } from './fleet-venue-control.js';

/** A connector given nothing but what it must have: every venue-control setting is its default. */
const bare = (venue: string): Connector => Connector.parse({ venue, baseUrl: `https://${venue}.example.com`, rateLimit: { limit: 10, periodMs: 1000 } });

describe('venue-control defaults: the connector schema and the venue control agree', () => {
  it('a connector with default AIMD settings resolves to DEFAULT_AIMD_LIMITS', () => {
    expect(aimdLimitsFor(bare('binance'))).toEqual(DEFAULT_AIMD_LIMITS);
    // A venue that starts from its floor gets the higher floor.
    expect(aimdLimitsFor(bare('polymarket'))).toMatchObject({ min: AIMD_DEFAULTS.floorStartMin, startFromFloor: true });
  });

  it('a connector with default freeze and cooldown settings has FREEZE_DEFAULTS and DEFAULT_BOOK_COOLDOWN', () => {
    const c = bare('binance');
    expect(freezeEscalationFor(c)).toEqual({ baseMs: FREEZE_DEFAULTS.freezeMs, maxMs: FREEZE_DEFAULTS.freezeMaxMs, cleanMs: FREEZE_DEFAULTS.freezeMs });
    expect(c.bookCooldown).toEqual(DEFAULT_BOOK_COOLDOWN);
  });
});
