import { jobId as makeJobId, sessionDayCursor, usEquitySession, usEquitySessions } from '@tickfleet/core';
import { alpacaBarTimes, DEFAULT_SEED } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { startAlpacaFleet, type AlpacaFleet } from './fixtures/alpaca-fleet.js';

const DAY = 86_400_000;
/** Tuesday 2024-01-23 12:00Z (07:00 New York): that day's session has not opened. */
const PIN = Date.UTC(2024, 0, 23, 12);
/** Day bars from Tuesday 2024-01-16 (the Monday before is Martin Luther King Jr. Day). */
const DAY_SINCE = Date.UTC(2024, 0, 16);
const DAY_SESSIONS = ['2024-01-16', '2024-01-17', '2024-01-18', '2024-01-19', '2024-01-22'];
/** Minute bars one day back: the whole session of Monday the 22nd. */
const MINUTE_SESSIONS = ['2024-01-22'];
/** The universe `alpaca/big`, 101 symbols: two requests' worth of symbols per day. */
const SYMBOLS = Array.from({ length: 101 }, (_, i) => `S${String(i).padStart(3, '0')}`);

/**
 * Alpaca per-day units end to end (real Scheduler and FleetWorker in process, redis-server, SQLite
 * store and sink, the emulation over HTTP): a day-bar and a minute-bar job over a 101-symbol
 * universe (`@big`) store exactly the bars Alpaca has for the calendar's sessions, in the fewest requests
 * (100 symbols per request, each day one unit for all jobs), and a re-run stores nothing twice.
 */
describe('alpaca: per-day units over a universe', () => {
  let fleet: AlpacaFleet;
  beforeAll(async () => {
    fleet = await startAlpacaFleet({ pinMs: PIN, minuteStartDays: 1 });
  });
  afterAll(() => fleet?.stop());

  const jobIdOf = (tf: '1d' | '1m'): string => makeJobId({ venue: 'alpaca', type: 'ohlcv', symbol: '@big', timeframe: tf });
  const cursorsAt = async (tf: '1d' | '1m', cursor: number): Promise<boolean> => (await fleet.store.jobs.get(jobIdOf(tf)))?.cursor === cursor;
  const addJob = async (tf: '1d' | '1m'): Promise<void> => {
    await fleet.store.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol: '@big', timeframe: tf, ...(tf === '1d' ? { since: DAY_SINCE } : {}) });
  };

  /** Runs of Alpaca units the worker counted that ended other than `ok` (`tickfleet_units_total`). */
  const otherRuns = async (): Promise<number> => {
    const metric = await fleet.workerRegistry.getSingleMetric('tickfleet_units_total')!.get();
    return metric.values.filter((v) => v.labels.venue === 'alpaca' && v.labels.outcome !== 'ok').reduce((n, v) => n + v.value, 0);
  };

  it('stores exactly the sessions’ bars with the minimal number of requests, and nothing twice on a re-run', async () => {
    await fleet.store.universes.set('alpaca', 'big', SYMBOLS);
    await addJob('1d');
    await addJob('1m');
    const lastDay = usEquitySession(DAY_SESSIONS.at(-1)!)!;
    const lastMinuteDay = usEquitySession(MINUTE_SESSIONS.at(-1)!)!;
    await waitFor(
      async () => (await cursorsAt('1d', sessionDayCursor('1d', lastDay))) && (await cursorsAt('1m', sessionDayCursor('1m', lastMinuteDay))),
      'every job at its last final day',
      {
        timeoutMs: 180_000,
        intervalMs: 500,
      },
    );
    const now = fleet.clock.now();
    // the calendar's sessions are the days collected
    expect(usEquitySessions(DAY_SINCE, Date.UTC(2024, 0, 23)).map((s) => s.date)).toEqual(DAY_SESSIONS);

    const dayTruth = new Map(SYMBOLS.map((s) => [s, alpacaBarTimes(s, '1d', DAY_SINCE, lastDay.dayStartMs + DAY, now, DEFAULT_SEED)]));
    const minuteFrom = usEquitySession(MINUTE_SESSIONS[0]!)!.dayStartMs;
    const minuteTruth = new Map(SYMBOLS.map((s) => [s, alpacaBarTimes(s, '1m', minuteFrom, lastMinuteDay.dayStartMs + DAY, now, DEFAULT_SEED)]));
    expect(await fleet.stored(SYMBOLS, '1d')).toEqual(dayTruth);
    expect(await fleet.stored(SYMBOLS, '1m')).toEqual(minuteTruth);
    expect([...dayTruth.values()].every((t) => t.length === DAY_SESSIONS.length)).toBe(true);

    // Fewest requests: per day, one request per 100 symbols for day bars; for minute bars each
    // 100-symbol batch takes ceil(its bars / 10000) pages.
    const minuteRequests = MINUTE_SESSIONS.map((date) => {
      const s = usEquitySession(date)!;
      const batches = [SYMBOLS.slice(0, 100), SYMBOLS.slice(100)];
      return batches.map((b) =>
        Math.ceil(b.reduce((n, sym) => n + minuteTruth.get(sym)!.filter((t) => t >= s.dayStartMs && t < s.dayStartMs + DAY).length, 0) / 10_000),
      );
    }).flat();
    const minuteUnit = minuteRequests.reduce((a, b) => a + b, 0);
    const minimal = DAY_SESSIONS.length * 2 + minuteUnit;
    const stats = fleet.mock.stats().venues.alpaca;
    expect({ ok: stats.responses2xx, refused: stats.responses429 }).toEqual({ ok: stats.requests, refused: 0 });
    // Each unit once, unless the worker says a run of it ended otherwise (yielded at a window's end,
    // retried after a timeout on a starved machine): such a run repeats at most one unit's requests.
    const reruns = await otherRuns();
    if (reruns === 0) expect(stats.requests).toBe(minimal);
    else expect(stats.requests - minimal).toBeLessThanOrEqual(reruns * Math.max(2, minuteUnit));

    // Re-run the day bars from scratch (as after a lost state store): every request again, no new row.
    const before = { requests: fleet.mock.stats().venues.alpaca.requests, reruns };
    await fleet.store.jobs.remove(jobIdOf('1d'));
    await addJob('1d');
    await waitFor(() => cursorsAt('1d', sessionDayCursor('1d', lastDay)), 'the day bars collected again', { timeoutMs: 120_000, intervalMs: 500 });
    const rerunsAgain = (await otherRuns()) - before.reruns;
    const again = fleet.mock.stats().venues.alpaca.requests - before.requests;
    if (rerunsAgain === 0) expect(again).toBe(DAY_SESSIONS.length * 2);
    else expect(again - DAY_SESSIONS.length * 2).toBeLessThanOrEqual(rerunsAgain * 2);
    expect(await fleet.stored(SYMBOLS, '1d')).toEqual(dayTruth);
  }, 300_000);
});
