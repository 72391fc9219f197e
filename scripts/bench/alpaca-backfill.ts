/**
 * Alpaca minute-bar backfill (issue 13): one `@bench` universe job of `--symbols` symbols (default
 * 100) collecting `--days` calendar days (default 30) of minute bars, through the real Scheduler
 * and FleetWorker against the Alpaca emulation at its real limit (200 requests per minute, the
 * connector's budget the same), SQLite store and sink, redis-server: the in-process fleet of
 * scripts/venues/fixtures/alpaca-fleet.ts, its clock pinned to Thursday 2024-02-15 12:00Z so the
 * sessions are the same on every run (22 sessions from Tuesday 2024-01-16).
 *
 *   node --import tsx scripts/bench/alpaca-backfill.ts [--symbols 100] [--days 30]
 *
 * Reports requests used against two floors: per-day units (each day's 100-symbol batches paged at
 * 10,000 bars: what this design can do at best) and the absolute one (every bar of the backfill
 * packed in 10,000-bar pages, days and symbols batched together); and the per-minute limit's
 * utilisation: requests per clock minute of the emulation's window over its 200.
 */
import { loadavg } from 'node:os';
import { jobId, sessionDayCursor, usEquitySessions } from '@tickfleet/core';
import { alpacaBarTimes, DEFAULT_SEED } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { startAlpacaFleet } from '../venues/fixtures/alpaca-fleet.js';

const args = process.argv.slice(2);
const num = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : Number.NaN;
  return Number.isInteger(v) && v > 0 ? v : fallback;
};
const SYMBOLS = Array.from({ length: num('symbols', 100) }, (_, i) => `B${String(i).padStart(3, '0')}`);
const DAYS = num('days', 30);
const PIN = Date.UTC(2024, 1, 15, 12);
const DAY = 86_400_000;
const PAGE = 10_000;
const PER_REQUEST = 100;
const LIMIT = 200;

const load0 = loadavg()[0]!;
const fleet = await startAlpacaFleet({ pinMs: PIN, minuteStartDays: DAYS });
try {
  const sessions = usEquitySessions(PIN - DAYS * DAY, PIN).filter((s) => s.closeMs + 4.25 * 3_600_000 < PIN);
  const last = sessions.at(-1)!;
  await fleet.store.universes.set('alpaca', 'bench', SYMBOLS);
  const started = performance.now();
  await fleet.store.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol: '@bench', timeframe: '1m' });
  const id = jobId({ venue: 'alpaca', type: 'ohlcv', symbol: '@bench', timeframe: '1m' });
  await waitFor(async () => (await fleet.store.jobs.get(id))?.cursor === sessionDayCursor('1m', last), 'the backfill done', {
    timeoutMs: 1_800_000,
    intervalMs: 250,
  });
  const elapsedMs = performance.now() - started;
  const stats = fleet.mock.stats().venues.alpaca;

  // The floors, from the emulation's own data.
  let bars = 0;
  let perDayFloor = 0;
  const perBatch: number[] = [];
  for (const s of sessions) {
    for (let i = 0; i < SYMBOLS.length; i += PER_REQUEST) {
      const n = SYMBOLS.slice(i, i + PER_REQUEST).reduce(
        (acc, sym) => acc + alpacaBarTimes(sym, '1m', s.dayStartMs, s.dayStartMs + DAY, fleet.clock.now(), DEFAULT_SEED).length,
        0,
      );
      bars += n;
      perDayFloor += Math.ceil(n / PAGE);
      perBatch[i / PER_REQUEST] = (perBatch[i / PER_REQUEST] ?? 0) + n;
    }
  }
  // one request series per 100-symbol batch over the whole range
  const absoluteFloor = perBatch.reduce((acc, n) => acc + Math.ceil(n / PAGE), 0);
  const stored = [...(await fleet.stored(SYMBOLS, '1m')).values()].reduce((a, t) => a + t.length, 0);
  const windows = stats.windows.filter((w) => w.weight > 0);
  const minutes = elapsedMs / 60_000;
  const result = {
    symbols: SYMBOLS.length,
    calendarDays: DAYS,
    sessions: sessions.length,
    bars,
    stored,
    elapsedS: Math.round(elapsedMs / 100) / 10,
    barsPerS: Math.round(stored / (elapsedMs / 1000)),
    requests: stats.requests,
    ok: stats.responses2xx,
    refused429: stats.responses429,
    perDayUnitFloor: perDayFloor,
    absoluteFloor,
    requestsPerMinuteWindow: windows.map((w) => w.weight),
    maxWindowUtilisation: Math.round((stats.maxWindowWeight / LIMIT) * 1000) / 1000,
    // requests per elapsed minute over the limit: above 1 when a run shorter than a minute used most of one window
    runRateOverLimit: Math.round((stats.requests / Math.max(minutes, 1 / 60) / LIMIT) * 1000) / 1000,
    load1: [Math.round(load0 * 100) / 100, Math.round(loadavg()[0]! * 100) / 100],
  };
  if (stored !== bars) throw new Error(`stored ${stored} bars, the emulation has ${bars}`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await fleet.stop();
}
