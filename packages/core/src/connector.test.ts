import { Connector, DEFAULT_MAX_INFLIGHT, defaultMaxInflight, VENUE_MAX_INFLIGHT_DEFAULTS } from './connector.js';

const base = { baseUrl: 'https://venue.example.com', rateLimit: { limit: 100, periodMs: 60_000 } };

describe('Connector defaults', () => {
  it('gives a connector created without maxInflight its venue default', () => {
    expect(VENUE_MAX_INFLIGHT_DEFAULTS).toEqual({ polygon: 1, alpaca: 2, finnhub: 2, fred: 2 });
    for (const [venue, cap] of [
      ['polygon', 1],
      ['alpaca', 2],
      ['finnhub', 2],
      ['fred', 2],
      ['binance', DEFAULT_MAX_INFLIGHT],
      ['xetra', 4],
    ] as const) {
      expect(defaultMaxInflight(venue)).toBe(cap);
      expect(Connector.parse({ venue, ...base }).maxInflight).toBe(cap);
    }
    expect(Connector.parse({ venue: 'polygon', ...base, maxInflight: 6 }).maxInflight).toBe(6);
  });

  it('defaults the freeze escalation and refuses a cap below the base freeze', () => {
    expect(Connector.parse({ venue: 'polygon', ...base })).toMatchObject({ freezeMs: 60_000, freezeMaxMs: 900_000 });
    const bad = Connector.safeParse({ venue: 'polygon', ...base, freezeMs: 120_000, freezeMaxMs: 60_000 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ['freezeMaxMs'], message: 'a cap at least freezeMs (--freeze-max >= --freeze)' });
  });
});
