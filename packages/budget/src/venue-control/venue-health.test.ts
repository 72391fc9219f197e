import {
  EMPTY_OUTCOME_RECORD,
  parseOutcomeRecord,
  sanitizeErrorMessage,
  VENUE_HEALTH_DEFAULTS,
  venueHealth,
  type VenueHealthContext,
  type VenueHealthState,
  type VenueOutcomeRecord,
} from './venue-health.js';

const NOW = 1_700_000_000_000;
const WINDOW_MS = VENUE_HEALTH_DEFAULTS.bucketMs * VENUE_HEALTH_DEFAULTS.buckets;
const ACTIVE: VenueHealthContext = { status: 'active', freeze: null, bookCooldownUntilMs: 0, nowMs: NOW };

function record(over: Partial<VenueOutcomeRecord> & { ok?: number; failed?: number; byCause?: VenueOutcomeRecord['window']['byCause'] }): VenueOutcomeRecord {
  const { ok = 0, failed = 0, byCause = {}, ...rest } = over;
  return { ...EMPTY_OUTCOME_RECORD, window: { ms: WINDOW_MS, ok, failed, byCause }, ...rest };
}

const connectionError = (agoMs: number) => ({ cause: 'connection' as const, atMs: NOW - agoMs, message: 'binance klines request failed: ECONNREFUSED' });

describe('venueHealth', () => {
  const cases: Array<[name: string, rec: VenueOutcomeRecord, ctx: Partial<VenueHealthContext>, state: VenueHealthState, reason: RegExp]> = [
    [
      'a disabled connector, whatever its units do',
      record({ failed: 50, failureStreak: 50, lastError: connectionError(1000) }),
      { status: 'disabled' },
      'disabled',
      /^connector disabled$/,
    ],
    [
      'a paused connector outranks a freeze',
      record({ ok: 10 }),
      { status: 'paused', freeze: { untilMs: NOW + 5000, cause: '429' } },
      'paused',
      /^connector paused$/,
    ],
    ['a freeze in force', record({ ok: 10 }), { freeze: { untilMs: NOW + 30_000, cause: '418' } }, 'frozen', /^frozen \(418\) for 30s more$/],
    [
      'a freeze that ended is no freeze',
      record({ ok: 10 }),
      { freeze: { untilMs: NOW - 1, cause: '429' } },
      'healthy',
      /^10 of 10 units succeeded in the last 5m$/,
    ],
    [
      'five failures in a row and no success since',
      record({ ok: 40, failed: 5, failureStreak: 5, lastError: connectionError(2000), byCause: { connection: 5 } }),
      {},
      'failing',
      /^the last 5 units failed, none succeeded since \(last: connection\)$/,
    ],
    [
      'a failure streak whose last failure is stale',
      record({ failureStreak: 9, lastError: connectionError(VENUE_HEALTH_DEFAULTS.failingStaleMs + 1) }),
      {},
      'idle',
      /^no unit finished/,
    ],
    [
      'almost every unit of the window failed, streaks broken by a rare success',
      record({ ok: 1, failed: 19, failureStreak: 2, lastError: connectionError(500), byCause: { connection: 15, timeout: 4 } }),
      {},
      'failing',
      /^19 of 20 units failed in the last 5m \(connection 15, timeout 4\)$/,
    ],
    [
      'four failures in a row are not yet failing',
      record({ failed: 4, failureStreak: 4, lastError: connectionError(100), byCause: { timeout: 4 } }),
      {},
      'degraded',
      /^4 of 4 units failed/,
    ],
    [
      'a failure ratio above the degraded threshold',
      record({ ok: 20, failed: 5, successStreak: 3, byCause: { server_error: 5 } }),
      {},
      'degraded',
      /^5 of 25 units failed in the last 5m \(server_error 5\)$/,
    ],
    [
      'one failure among a few successes is a blip, not a degradation',
      record({ ok: 5, failed: 1, successStreak: 3 }),
      {},
      'healthy',
      /^5 of 6 units succeeded/,
    ],
    ['failures at the degraded ratio exactly are not above it', record({ ok: 27, failed: 3, successStreak: 1 }), {}, 'healthy', /^27 of 30/],
    [
      'failures just above the degraded ratio',
      record({ ok: 26, failed: 3, successStreak: 1, byCause: { timeout: 3 } }),
      {},
      'degraded',
      /^3 of 29 units failed/,
    ],
    [
      'recovered: ten successes in a row outweigh the outage still in the window',
      record({ ok: 10, failed: 60, successStreak: 10, lastError: connectionError(20_000), byCause: { connection: 60 } }),
      {},
      'healthy',
      /^the last 10 units succeeded \(60 failed earlier in the last 5m\)$/,
    ],
    [
      'nine successes after an outage are not yet a recovery',
      record({ ok: 5, failed: 60, successStreak: 5, lastError: connectionError(20_000) }),
      {},
      'failing',
      /^60 of 65 units failed/,
    ],
    [
      'an outage fading out of the window',
      record({ ok: 9, failed: 60, successStreak: 9, lastError: connectionError(20_000) }),
      {},
      'degraded',
      /^60 of 69 units failed/,
    ],
    ['one failure and nothing else', record({ failed: 1, failureStreak: 1, lastError: connectionError(10) }), {}, 'degraded', /^1 of 1 units failed/],
    ['a 429 within the window', record({ ok: 50, successStreak: 50, lastRateLimitAtMs: NOW - 60_000 }), {}, 'degraded', /^rate limited by the venue 1m ago$/],
    [
      'a recovery does not hide a 429',
      record({ ok: 50, failed: 10, successStreak: 40, lastRateLimitAtMs: NOW - 1000 }),
      {},
      'degraded',
      /^rate limited by the venue 1s ago$/,
    ],
    ['a 429 older than the window', record({ ok: 50, lastRateLimitAtMs: NOW - WINDOW_MS - 1 }), {}, 'healthy', /^50 of 50/],
    ['an order-book cooldown in force', record({ ok: 5 }), { bookCooldownUntilMs: NOW + 10_000 }, 'degraded', /^order-book polling cools down for 10s more$/],
    ['no outcome in the window, last error kept', record({ lastError: connectionError(3_600_000) }), {}, 'idle', /^no unit finished in the last 5m$/],
    ['nothing reported ever', EMPTY_OUTCOME_RECORD, {}, 'idle', /^no unit finished/],
    ['a venue without a connector is judged by its units', record({ ok: 3 }), { status: null }, 'healthy', /^3 of 3/],
  ];

  it.each(cases)('%s', (_name, rec, ctx, state, reason) => {
    const health = venueHealth(rec, { ...ACTIVE, ...ctx });
    expect(health.state).toBe(state);
    expect(health.reason).toMatch(reason);
    // The record it judged comes back with the verdict (status, dashboard, /healthz show both).
    expect(health).toMatchObject(rec);
  });

  it('takes thresholds from its settings', () => {
    const rec = record({ ok: 1, failed: 2, failureStreak: 2, lastError: connectionError(10) });
    expect(venueHealth(rec, ACTIVE).state).toBe('degraded');
    expect(venueHealth(rec, ACTIVE, { ...VENUE_HEALTH_DEFAULTS, degradedMinFailures: 3 }).state).toBe('healthy');
    expect(venueHealth(rec, ACTIVE, { ...VENUE_HEALTH_DEFAULTS, failingStreak: 2 }).state).toBe('failing');
  });
});

describe('parseOutcomeRecord', () => {
  const bucket = Math.floor(NOW / 60_000);
  it('sums the buckets still in the window, skipping slots that hold older buckets', () => {
    const fields = {
      bms: '60000',
      nb: '5',
      [`b${bucket % 5}`]: String(bucket),
      [`o${bucket % 5}`]: '3',
      [`f${bucket % 5}`]: '2',
      [`c${bucket % 5}`]: '{"connection":2}',
      [`b${(bucket - 4) % 5}`]: String(bucket - 4),
      [`o${(bucket - 4) % 5}`]: '1',
      [`f${(bucket - 4) % 5}`]: '4',
      [`c${(bucket - 4) % 5}`]: '{"connection":1,"timeout":3,"bogus":9}',
      // a slot last written five buckets ago: out of the window
      [`b${(bucket - 2) % 5}`]: String(bucket - 7),
      [`o${(bucket - 2) % 5}`]: '100',
      fs: '0',
      ss: '3',
      let: String(NOW - 5000),
      lec: 'timeout',
      lem: 'binance klines timed out after 10000 ms',
      okt: String(NOW - 100),
    };
    expect(parseOutcomeRecord(fields, NOW - 90_000, NOW)).toEqual({
      window: { ms: 300_000, ok: 4, failed: 6, byCause: { connection: 3, timeout: 3, other: 9 } },
      failureStreak: 0,
      successStreak: 3,
      lastError: { cause: 'timeout', atMs: NOW - 5000, message: 'binance klines timed out after 10000 ms' },
      lastSuccessAtMs: NOW - 100,
      lastRateLimitAtMs: NOW - 90_000,
    });
  });

  it('reads a hash never written as an empty record', () => {
    expect(parseOutcomeRecord({}, null, NOW)).toEqual(EMPTY_OUTCOME_RECORD);
  });
});

describe('sanitizeErrorMessage', () => {
  it('keeps no query, credentials or key-like values, and bounds the length', () => {
    expect(sanitizeErrorMessage('GET https://user:pw@api.polygon.io/v2/aggs?apiKey=SECRET123&limit=5 failed: ECONNRESET')).toBe(
      'GET https://api.polygon.io/v2/aggs failed: ECONNRESET',
    );
    expect(sanitizeErrorMessage('finnhub answered 401 (token=abc123def, api_key: "xyz")')).toBe('finnhub answered 401 (token=***, api_key: "***")');
    expect(sanitizeErrorMessage('binance klines\n  request failed:\tECONNREFUSED')).toBe('binance klines request failed: ECONNREFUSED');
    const long = sanitizeErrorMessage('x'.repeat(500));
    expect(long).toHaveLength(VENUE_HEALTH_DEFAULTS.messageMaxChars);
    expect(long.endsWith('…')).toBe(true);
  });
});
