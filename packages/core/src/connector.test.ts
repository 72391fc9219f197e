import { Connector, DEFAULT_MAX_INFLIGHT, defaultMaxInflight, VENUE_MAX_INFLIGHT_DEFAULTS, WORKER_LIVENESS_MS } from './connector.js';
import { parseOrThrow } from './parse.js';

const base = { baseUrl: 'https://venue.example.com', rateLimit: { limit: 100, periodMs: 60_000 } };

describe('Connector defaults', () => {
  it('gives a connector created without maxInflight its venue default', () => {
    expect(VENUE_MAX_INFLIGHT_DEFAULTS).toEqual({ polygon: 1, alpaca: 2, finnhub: 2, fred: 2, limitless: 2 });
    for (const [venue, cap] of [
      ['polygon', 1],
      ['alpaca', 2],
      ['finnhub', 2],
      ['fred', 2],
      ['limitless', 2],
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

  it('refuses an AIMD restart period shorter than the liveness window unless it is 0 (never)', () => {
    const aimd = (restartAfterMs: number) => Connector.safeParse({ venue: 'polymarket', ...base, aimd: { restartAfterMs } });
    expect(WORKER_LIVENESS_MS).toBe(15_000);
    expect(aimd(0).data?.aimd.restartAfterMs).toBe(0);
    expect(aimd(15_000).data?.aimd.restartAfterMs).toBe(15_000);
    expect(aimd(600_000).success).toBe(true);
    for (const short of [1, 5000, 14_999]) {
      expect(aimd(short).error?.issues[0]).toMatchObject({
        path: ['aimd', 'restartAfterMs'],
        message: "0 (never) or at least 15000 ms, the workers' liveness window",
      });
    }
    expect(() => parseOrThrow(Connector, { venue: 'polymarket', ...base, aimd: { restartAfterMs: 5000 } }, 'connector')).toThrow(
      "invalid connector.aimd.restartAfterMs: expected 0 (never) or at least 15000 ms, the workers' liveness window",
    );
  });
});
