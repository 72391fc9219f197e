/**
 * The multi-host scenarios of issue 39 on a {@link HostTopology}: one Binance connector whose
 * limit the emulation enforces, live 1m jobs running throughout, and a backfill per scenario sized
 * so demand exceeds the limit while the scenario's steps or faults last. Each scenario ends with
 * the chaos suite's end checks ({@link endChecks}): the stored candles against the emulation's
 * `expectedCandles` (0 missing, 0 duplicated), the emulation's own count of requests over the
 * limit, every backfill `done`, live cursors = newest stored.
 */
import { alignDown, lastClosedOpenTime } from '@tickfleet/core';
import { waitFor, type CandleReport } from '@tickfleet/testkit';
import type { HostProcess, HostTopology } from './topology.js';

const MIN = 60_000;
const DAY = 86_400_000;

export const HOST_SCENARIO_DEFAULTS = {
  venue: 'binance',
  /** The venue's limit: 20 weight (10 klines requests) per clock-aligned 5 s window. */
  limitWeight: 20,
  windowMs: 5000,
  /** Venue service time per request, uniform in [min, max]. */
  latencyMs: { min: 50, max: 300 },
  /**
   * Fleet-wide in-flight cap of the venue's units: above what the budget lets through (about
   * 2 requests a second) times a unit's time on a busy machine (5 s measured: sink and store
   * writes on 2 loaded cores), so the budget, not the cap, is the bound.
   */
  maxInflight: 12,
  liveSymbols: ['SOL/USDT'],
  backfillSymbols: ['BTC/USDT', 'ETH/USDT'],
  /** How often the workers' in-flight gauges are sampled. */
  sampleMs: 250,
  /** A fault begins this long after its backfill was created, once every host's workers took units of it. */
  warmupMs: 3000,
  /** How often the end checks look whether the backfills ended and the live jobs caught up. */
  endPollMs: 500,
} as const;

/** The emulation scenario the topology starts with: the venue's limit (no ban, so a scenario's overspend cannot stop the next) and latency. */
export function venueScenario(): Record<string, unknown> {
  const d = HOST_SCENARIO_DEFAULTS;
  return {
    venues: {
      [d.venue]: { latencyMs: d.latencyMs, limit: { weight: d.limitWeight, windowMs: d.windowMs, banAfter: 1_000_000 } },
    },
  };
}

const liveJobId = (symbol: string): string => `${HOST_SCENARIO_DEFAULTS.venue}:${symbol}:1m:ohlcv`;

/** The connector, the live jobs and the scheduler; the workers are each scenario's. */
export async function prepareFleet(t: HostTopology): Promise<{ scheduler: HostProcess; liveSince: number }> {
  const d = HOST_SCENARIO_DEFAULTS;
  await t.cli([
    'connectors',
    'upsert',
    d.venue,
    '--base-url',
    `${t.venueUrl}/${d.venue}`,
    '--limit',
    String(d.limitWeight),
    '--period',
    `${d.windowMs / 1000}s`,
    '--max-inflight',
    String(d.maxInflight),
  ]);
  const liveSince = alignDown(Date.now() - 3 * 3_600_000, '1m');
  await t.withStore(async (store) => {
    for (const symbol of d.liveSymbols) await store.jobs.upsert({ venue: d.venue, type: 'ohlcv', symbol, timeframe: '1m', since: liveSince });
  });
  const scheduler = await t.startScheduler();
  return { scheduler, liveSince };
}

export interface Backfill {
  id: string;
  symbol: string;
  from: number;
  to: number;
}

/** A backfill of `days` of 1m candles for each backfill symbol, ending at the last full day before `endDaysAgo`. */
export async function startBackfills(t: HostTopology, days: number, endDaysAgo: number): Promise<Backfill[]> {
  const to = Math.floor(Date.now() / DAY) * DAY - endDaysAgo * DAY;
  const from = to - days * DAY;
  return Promise.all(
    HOST_SCENARIO_DEFAULTS.backfillSymbols.map(async (symbol) => {
      const out = await t.cli([
        'backfill',
        HOST_SCENARIO_DEFAULTS.venue,
        symbol,
        '--timeframe',
        '1m',
        '--from',
        new Date(from).toISOString(),
        '--to',
        new Date(to).toISOString(),
        '--json',
      ]);
      return { id: (JSON.parse(out) as { id: string }).id, symbol, from, to };
    }),
  );
}

/** Samples the fleet's in-flight units (the workers' `tickfleet_worker_inflight_units`, summed) until stopped. */
export function sampleInflight(t: HostTopology): { max(): number; maxSince(ms: number): number; stop(): Promise<void> } {
  const samples: Array<{ at: number; inflight: number }> = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const values = await Promise.all(t.workers().map((w) => t.metric(w, 'tickfleet_worker_inflight_units', { venue: HOST_SCENARIO_DEFAULTS.venue })));
      samples.push({ at: Date.now(), inflight: values.reduce<number>((n, v) => n + (v ?? 0), 0) });
      await new Promise((r) => setTimeout(r, HOST_SCENARIO_DEFAULTS.sampleMs));
    }
  })();
  return {
    max: () => Math.max(0, ...samples.map((s) => s.inflight)),
    maxSince: (ms) => Math.max(0, ...samples.filter((s) => s.at >= ms).map((s) => s.inflight)),
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Mean accepted weight / limit over the emulation's windows wholly inside [fromMs, toMs); null when none is. */
export async function utilisation(t: HostTopology, fromMs: number, toMs: number): Promise<{ windows: number; utilisation: number | null }> {
  const s = await t.venueStats(HOST_SCENARIO_DEFAULTS.venue);
  const inside = s.windows.filter((w) => w.startMs >= fromMs && w.startMs + s.windowMs <= toMs);
  if (!inside.length) return { windows: 0, utilisation: null };
  return { windows: inside.length, utilisation: inside.reduce((n, w) => n + w.weight, 0) / inside.length / s.limit };
}

export interface EndChecks {
  /** Seconds the end checks waited for the backfills to end, then for the live jobs, then read the sink. */
  waited: { backfillsS: number; liveS: number; readsS: number };
  /** `firstError`: why the first failed chunk failed. */
  backfills: Array<{ id: string; status: string; unitsDone: number; unitsTotal: number; unitsFailed: number; firstError: string | null }>;
  candles: Record<string, CandleReport>;
  live: Record<string, CandleReport & { cursor: number | null }>;
  /** Requests the emulation counted over its limit since `overLimitBefore`. */
  overLimit: number;
  requests: number;
  /** Largest accepted weight of a window since the scenario began, against the limit. */
  maxWindowWeight: number;
  limit: number;
}

/**
 * Waits until every backfill ended and every live job's cursor caught up with the last closed
 * minute, then compares everything stored with the emulation's ground truth.
 */
export async function endChecks(
  t: HostTopology,
  opts: { backfills: Backfill[]; liveSince: number; since: number; overLimitBefore: number; requestsBefore: number; timeoutMs?: number },
): Promise<EndChecks> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const ids = opts.backfills.map((b) => b.id);
  const marks = [Date.now()];
  await waitFor(
    () =>
      t.withStore(async (store) =>
        (await Promise.all(ids.map((id) => store.backfills.get(id)))).every((b) => b && ['done', 'failed', 'cancelled'].includes(b.status)),
      ),
    'every backfill ended',
    { timeoutMs, intervalMs: HOST_SCENARIO_DEFAULTS.endPollMs },
  );
  marks.push(Date.now());
  const liveIds = HOST_SCENARIO_DEFAULTS.liveSymbols.map(liveJobId);
  await waitFor(
    () =>
      t.withStore(async (store) => {
        const target = lastClosedOpenTime(Date.now() - 2500, '1m') - MIN;
        return (await Promise.all(liveIds.map((id) => store.jobs.get(id)))).every((j) => (j?.cursor ?? 0) >= target);
      }),
    'every live job caught up',
    { timeoutMs, intervalMs: HOST_SCENARIO_DEFAULTS.endPollMs },
  );
  marks.push(Date.now());
  const backfills = await t.withStore((store) =>
    Promise.all(
      ids.map(async (id) => {
        const b = (await store.backfills.get(id))!;
        const failed = b.unitsFailed > 0 ? await store.backfills.chunks(id, { status: 'failed' }) : [];
        return { id, status: b.status, unitsDone: b.unitsDone, unitsTotal: b.unitsTotal, unitsFailed: b.unitsFailed, firstError: failed[0]?.error ?? null };
      }),
    ),
  );
  const candles: EndChecks['candles'] = {};
  for (const b of opts.backfills) candles[b.symbol] = await t.candleReport(HOST_SCENARIO_DEFAULTS.venue, b.symbol, b.from, b.to);
  const live: EndChecks['live'] = {};
  for (const symbol of HOST_SCENARIO_DEFAULTS.liveSymbols) {
    const job = await t.withStore((store) => store.jobs.get(liveJobId(symbol)));
    const cursor = job?.cursor ?? null;
    live[symbol] = { ...(await t.candleReport(HOST_SCENARIO_DEFAULTS.venue, symbol, opts.liveSince, (cursor ?? opts.liveSince) + MIN)), cursor };
  }
  const s = await t.venueStats(HOST_SCENARIO_DEFAULTS.venue);
  const windows = s.windows.filter((w) => w.startMs + s.windowMs > opts.since);
  marks.push(Date.now());
  const took = (i: number): number => Math.round((marks[i + 1]! - marks[i]!) / 1000);
  return {
    waited: { backfillsS: took(0), liveS: took(1), readsS: took(2) },
    backfills,
    candles,
    live,
    overLimit: s.overLimitRequests - opts.overLimitBefore,
    requests: s.requests - opts.requestsBefore,
    maxWindowWeight: Math.max(0, ...windows.map((w) => w.weight)),
    limit: s.limit,
  };
}

/** What is wrong with the end checks (empty: all hold), over-limit requests aside. */
export function endCheckFailures(c: EndChecks): string[] {
  const out: string[] = [];
  for (const b of c.backfills)
    if (b.status !== 'done' || b.unitsFailed > 0)
      out.push(`backfill ${b.id} ${b.status} (${b.unitsDone}/${b.unitsTotal}, ${b.unitsFailed} failed${b.firstError ? `: ${b.firstError}` : ''})`);
  for (const [symbol, r] of Object.entries(c.candles))
    if (r.missing || r.duplicates || r.unexpected) out.push(`${symbol}: ${r.missing} missing, ${r.duplicates} duplicated, ${r.unexpected} unexpected`);
  for (const [symbol, r] of Object.entries(c.live)) {
    if (r.missing || r.duplicates || r.unexpected) out.push(`live ${symbol}: ${r.missing} missing, ${r.duplicates} duplicated, ${r.unexpected} unexpected`);
    if (r.cursor !== r.newest) out.push(`live ${symbol}: cursor ${r.cursor} != newest stored ${r.newest}`);
  }
  return out;
}

/** One line of the end checks. */
export function formatEndChecks(c: EndChecks): string {
  const stored = Object.values(c.candles).reduce((n, r) => n + r.stored, 0);
  const expected = Object.values(c.candles).reduce((n, r) => n + r.expected, 0);
  const missing = [...Object.values(c.candles), ...Object.values(c.live)].reduce((n, r) => n + r.missing, 0);
  const dup = [...Object.values(c.candles), ...Object.values(c.live)].reduce((n, r) => n + r.duplicates, 0);
  const done = c.backfills.filter((b) => b.status === 'done').length;
  const cursors = Object.values(c.live).every((r) => r.cursor === r.newest);
  return (
    `backfills done ${done}/${c.backfills.length}; stored ${stored}/${expected} backfill candles, ${missing} missing, ${dup} duplicated (live jobs included); ` +
    `live cursors = newest stored: ${cursors}; over the limit ${c.overLimit} of ${c.requests} requests (max window ${c.maxWindowWeight}/${c.limit})`
  );
}

/** Where the end checks' time went. */
export function formatWaits(c: EndChecks): string {
  return `end checks waited ${c.waited.backfillsS} s for the backfills, ${c.waited.liveS} s for the live jobs, read ${c.waited.readsS} s`;
}

/** Counters a scenario starts from. */
export async function scenarioStart(t: HostTopology): Promise<{ since: number; overLimitBefore: number; requestsBefore: number }> {
  const s = await t.venueStats(HOST_SCENARIO_DEFAULTS.venue);
  return { since: Date.now(), overLimitBefore: s.overLimitRequests, requestsBefore: s.requests };
}

export interface ScaleStep {
  workers: number;
  /** Mean share of the venue's limit used over the step's whole windows. */
  utilisation: number | null;
  windows: number;
  /** Largest sampled fleet in-flight count during the step (the transition into it included). */
  maxInflight: number;
  /** Seconds the step's new processes took to be ready (and the removed ones to stop). */
  transitionS: number;
}

/**
 * Scenario 1: worker processes scaled over the worker hosts like `kubectl scale` (`counts`, e.g.
 * [1, 3]: one on w1, then one more on each next host, round-robin), `stepMs` per step, during a
 * backfill and the live jobs; per step the venue-budget utilisation and the in-flight maximum.
 */
export async function scaleScenario(
  t: HostTopology,
  liveSince: number,
  opts: { counts: number[]; stepMs: number; backfillDays: number; endDaysAgo: number },
): Promise<{ steps: ScaleStep[]; cap: number; checks: EndChecks }> {
  const start = await scenarioStart(t);
  const backfills = await startBackfills(t, opts.backfillDays, opts.endDaysAgo);
  const sampler = sampleInflight(t);
  const steps: ScaleStep[] = [];
  const mine: HostProcess[] = [];
  try {
    for (const count of opts.counts) {
      const transitionStart = Date.now();
      // Scale up round-robin over the hosts (new processes start side by side, as pods do), down by SIGTERM (a pod's graceful stop), newest first.
      const alive = mine.filter((w) => w.child.exitCode === null);
      const hosts = Array.from({ length: Math.max(0, count - alive.length) }, (_, i) => t.workerHosts[(alive.length + i) % t.workerHosts.length]!);
      mine.push(...(await Promise.all(hosts.map((h) => t.startWorker(h)))));
      await Promise.all(
        alive
          .slice(count)
          .reverse()
          .map((w) => t.stopProcess(w)),
      );
      // The step's figures start once its processes are ready: a busy machine takes seconds to start one.
      const stepStart = Date.now();
      await new Promise((r) => setTimeout(r, opts.stepMs));
      const u = await utilisation(t, stepStart, Date.now());
      steps.push({
        workers: count,
        utilisation: u.utilisation,
        windows: u.windows,
        maxInflight: sampler.maxSince(transitionStart),
        transitionS: Math.round((stepStart - transitionStart) / 1000),
      });
    }
  } finally {
    await sampler.stop();
  }
  const checks = await endChecks(t, { backfills, liveSince, ...start });
  return { steps, cap: HOST_SCENARIO_DEFAULTS.maxInflight, checks };
}

/**
 * Scenario 4: the workers of one host restarted on a wall clock `offset` off (libfaketime, e.g.
 * `+30s`), the other hosts' workers unchanged, for `holdMs` of a backfill; then back on the true
 * clock. Returns the end checks and the utilisation while the skewed host ran.
 */
export async function clockScenario(
  t: HostTopology,
  liveSince: number,
  opts: { host: string; offset: string; holdMs: number; backfillDays: number; endDaysAgo: number },
): Promise<{ checks: EndChecks; utilisation: number | null }> {
  await ensureWorkerPerHost(t);
  const start = await scenarioStart(t);
  const backfills = await startBackfills(t, opts.backfillDays, opts.endDaysAgo);
  for (const w of t.workers(opts.host)) await t.stopProcess(w);
  const skewed = await t.startWorker(opts.host, { clockOffset: opts.offset });
  const from = Date.now();
  await new Promise((r) => setTimeout(r, opts.holdMs));
  const u = await utilisation(t, from, Date.now());
  await t.stopProcess(skewed);
  // Back on the true clock while the other hosts finish the backfill.
  const restarted = t.startWorker(opts.host);
  const checks = await endChecks(t, { backfills, liveSince, ...start });
  await restarted;
  return { checks, utilisation: u.utilisation };
}

/**
 * Scenario 2: worker hosts `hosts` lose their links to `peers` (`store`, `redis` or both) for
 * `holdMs`, by routes on both ends, while a backfill runs; every other link stays up.
 */
export async function partitionScenario(
  t: HostTopology,
  liveSince: number,
  opts: { hosts: string[]; peers: string[]; holdMs: number; backfillDays: number; endDaysAgo: number },
): Promise<{ checks: EndChecks; requestsDuring: number; overLimitDuring: number; hostRequestsDuring: number | null; fallbackEngaged: boolean }> {
  await ensureWorkerPerHost(t);
  const start = await scenarioStart(t);
  const backfills = await startBackfills(t, opts.backfillDays, opts.endDaysAgo);
  // Let collection get under way on every host before the split.
  await new Promise((r) => setTimeout(r, HOST_SCENARIO_DEFAULTS.warmupMs));
  const split = opts.hosts.flatMap((h) => t.workers(h));
  /** Venue requests the split hosts' workers sent (their own metric); null when one does not answer. */
  const hostRequests = async (): Promise<number | null> => {
    const values = await Promise.all(split.map((w) => t.metric(w, 'tickfleet_request_duration_seconds_count', { venue: HOST_SCENARIO_DEFAULTS.venue })));
    return values.some((v) => v === null) ? null : values.reduce<number>((n, v) => n + v!, 0);
  };
  const before = await t.venueStats(HOST_SCENARIO_DEFAULTS.venue);
  const hostBefore = await hostRequests();
  const outputBefore = split.map((w) => w.output().length);
  const pairs = opts.hosts.flatMap((h) => opts.peers.map((p) => [h, p] as const));
  for (const [h, p] of pairs) t.net.partition(h, p);
  try {
    await new Promise((r) => setTimeout(r, opts.holdMs));
  } finally {
    for (const [h, p] of pairs) t.net.heal(h, p);
  }
  const after = await t.venueStats(HOST_SCENARIO_DEFAULTS.venue);
  const hostAfter = await hostRequests();
  const hostRequestsDuring = hostBefore === null || hostAfter === null ? null : hostAfter - hostBefore;
  const fallbackEngaged = split.some((w, i) => w.output().slice(outputBefore[i]).includes('budgeting locally'));
  const checks = await endChecks(t, { backfills, liveSince, ...start });
  return {
    checks,
    requestsDuring: after.requests - before.requests,
    overLimitDuring: after.overLimitRequests - before.overLimitRequests,
    hostRequestsDuring,
    fallbackEngaged,
  };
}

/**
 * Scenario 3a: a worker host lost mid-unit: once its workers hold units in flight, every process
 * on it is SIGKILLed; then its proxy and a worker start again (a node that comes back).
 */
export async function hostLostScenario(
  t: HostTopology,
  liveSince: number,
  opts: { host: string; backfillDays: number; endDaysAgo: number },
): Promise<{ checks: EndChecks; inflightAtKill: number }> {
  await ensureWorkerPerHost(t);
  const start = await scenarioStart(t);
  const backfills = await startBackfills(t, opts.backfillDays, opts.endDaysAgo);
  const lost = t.workers(opts.host);
  let inflightAtKill = 0;
  await waitFor(
    async () => {
      const values = await Promise.all(lost.map((w) => t.metric(w, 'tickfleet_worker_inflight_units', { venue: HOST_SCENARIO_DEFAULTS.venue })));
      inflightAtKill = values.reduce<number>((n, v) => n + (v ?? 0), 0);
      return inflightAtKill > 0;
    },
    `a unit in flight on ${opts.host}`,
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  await t.killHost(opts.host);
  await t.startProxy(opts.host);
  await t.startWorker(opts.host);
  const checks = await endChecks(t, { backfills, liveSince, ...start });
  return { checks, inflightAtKill };
}

/**
 * Scenario 3b: the Redis host lost (SIGKILL) and restarted empty (no persistence) while worker
 * host `host` is cut off by a link cut: the queues, locks and venue state are gone, the scheduler
 * re-creates the owed units from the store, and the cut-off host comes back to a Redis that never
 * knew its units.
 */
export async function redisRestartScenario(
  t: HostTopology,
  liveSince: number,
  opts: { host: string; holdMs: number; redisDownMs: number; backfillDays: number; endDaysAgo: number },
): Promise<{ checks: EndChecks }> {
  await ensureWorkerPerHost(t);
  const start = await scenarioStart(t);
  const backfills = await startBackfills(t, opts.backfillDays, opts.endDaysAgo);
  await new Promise((r) => setTimeout(r, HOST_SCENARIO_DEFAULTS.warmupMs));
  const cutAt = Date.now();
  t.net.cutLink(opts.host);
  try {
    await t.killHost('redis');
    await new Promise((r) => setTimeout(r, opts.redisDownMs));
    await t.startRedis();
    await new Promise((r) => setTimeout(r, Math.max(0, cutAt + opts.holdMs - Date.now())));
  } finally {
    t.net.restoreLink(opts.host);
  }
  const checks = await endChecks(t, { backfills, liveSince, ...start, timeoutMs: 240_000 });
  return { checks };
}

/** At least one running worker on every worker host. */
export async function ensureWorkerPerHost(t: HostTopology): Promise<void> {
  await Promise.all(t.workerHosts.filter((h) => !t.workers(h).length).map((h) => t.startWorker(h)));
}
