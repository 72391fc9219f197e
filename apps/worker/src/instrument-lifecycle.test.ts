import type { Instrument } from '@tickfleet/venues';
import { nextActiveSet, UNDATED_RETENTION_MS } from './instrument-lifecycle.js';
import { BOOK_BACKOFF_JITTER, jitteredBackoffMs } from '@tickfleet/budget';

const T0 = Date.UTC(2026, 0, 1);

function inst(symbol: string, marketId: string, expiresAtMs?: number): Instrument {
  return {
    symbol,
    venueSymbol: symbol,
    market: { marketId, slug: `m-${marketId}`, outcomes: ['Yes', 'No'], tokenIds: [symbol], ...(expiresAtMs === undefined ? {} : { expiresAtMs }) },
  };
}

describe('nextActiveSet: instruments sticky until their market expires', () => {
  it('keeps an instrument missing from a listing until its expiry, then retires it with the reason', () => {
    const first = nextActiveSet('polymarket', null, [inst('a', '1', T0 + 10_000), inst('b', '2', T0 + 2 * UNDATED_RETENTION_MS), inst('c', '3')], T0);
    expect(first.next.version).toBe(1);
    expect(first.listed.map((i) => i.symbol)).toEqual(['a', 'b', 'c']);

    // a and c are missing from the next listing: both stay, nothing retired, nothing listed.
    const second = nextActiveSet('polymarket', first.next, [inst('b', '2', T0 + 2 * UNDATED_RETENTION_MS)], T0 + 1000);
    expect(Object.keys(second.next.instruments).sort()).toEqual(['a', 'b', 'c']);
    expect(second).toMatchObject({ listed: [], retired: [] });
    expect(second.next.instruments.a!.lastSeenMs).toBe(T0);

    // After a's expiry it leaves the set whether listed or not; c (no expiry) stays for a day.
    const third = nextActiveSet('polymarket', second.next, [inst('a', '1', T0 + 10_000), inst('b', '2', T0 + 2 * UNDATED_RETENTION_MS)], T0 + 10_000);
    expect(third.retired).toEqual([
      { instrument: expect.objectContaining({ symbol: 'a' }), reason: `market 1 expired at ${new Date(T0 + 10_000).toISOString()}` },
    ]);
    expect(Object.keys(third.next.instruments).sort()).toEqual(['b', 'c']);

    const fourth = nextActiveSet('polymarket', third.next, [inst('b', '2', T0 + 2 * UNDATED_RETENTION_MS)], T0 + UNDATED_RETENTION_MS);
    expect(fourth.retired.map((r) => [r.instrument.symbol, r.reason])).toEqual([
      ['c', `market 3 not listed since ${new Date(T0).toISOString()} and has no expiry`],
    ]);
    expect(fourth.next.version).toBe(4);
  });

  it('never lists an instrument whose market already expired', () => {
    const change = nextActiveSet('limitless', null, [inst('old', '9', T0 - 1)], T0);
    expect(change).toMatchObject({ listed: [], retired: [], next: { instruments: {} } });
  });
});

describe('per-instrument backoff jitter', () => {
  it('is deterministic per instrument, within the jitter share, and differs between instruments', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `polymarket:${1000 + i}:book`);
    const delays = ids.map((id) => jitteredBackoffMs(id, 10_000));
    expect(ids.map((id) => jitteredBackoffMs(id, 10_000))).toEqual(delays);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(10_000);
      expect(d).toBeLessThanOrEqual(10_000 * (1 + BOOK_BACKOFF_JITTER));
    }
    expect(new Set(delays).size).toBeGreaterThan(15);
  });
});
