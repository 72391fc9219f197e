import { calendarFor, type Connector, type ConnectorStatus, type Job, type RateLimitPolicyName, timeframeMs } from '@tickfleet/core';
import { aimdLimitsFor, type FleetVenueControl, type FreezeCause, type VenueHealth, venueHold, type WorkerHeartbeat } from '@tickfleet/budget';
import type { UnitCounts, VenueQueues } from '@tickfleet/queues';
import type { ConnectorJobCounts, JobLeases, StateStore } from '@tickfleet/store';
import { spoolDepth, type SpoolDepth } from './internal/spool-depth.js';
import { collectStreamStatus, type StreamStatus, type StreamStatusSource } from './stream-status.js';
import { collectBookLoopStatus, type BookLoopStatus } from './book-loop-status.js';

export type { SpoolDepth } from './internal/spool-depth.js';

/** Where the fleet's state lives; every source is read, never written (except AIMD limits configured in memory). */
export interface FleetStatusSources {
  store: StateStore;
  queues: VenueQueues;
  control: FleetVenueControl;
  /** Worker heartbeats; without it `liveWorkers` is null. */
  liveness?: WorkerHeartbeat;
  /** Spool base directory (each worker spools under `worker-<n>/` of it); without it `spool` is null. */
  spoolDir?: string;
  /** The fleet's Redis and key prefix for the streams' holders and live states; without it `streams` is null. */
  streams?: StreamStatusSource;
  /** Time of the snapshot (epoch ms). @defaultValue Date.now() */
  now?: number;
}

export interface VenueBudgetStatus {
  policy: RateLimitPolicyName;
  /** Weight spent in the current window (fixed-window) or the bucket level (gcra). */
  used: number;
  /** Effective limit per window: `floor(limit * headroom)`. */
  limit: number;
  /** `limit - used`, never negative. */
  remaining: number;
  periodMs: number;
  windowStartMs: number | null;
  resetAtMs: number;
}

export interface VenueFreezeStatus {
  /** Why the venue is frozen, as recorded by whoever froze it: a 429, a 418 ban, its budget or an operator. */
  cause: FreezeCause;
  untilMs: number;
  remainingMs: number;
}

export interface VenueCursorLag {
  /** `now - (cursor + timeframe)` of the enabled ohlcv job furthest behind: how old its newest closed candle is. */
  maxMs: number | null;
  /** The job furthest behind. */
  jobId: string | null;
  /**
   * Largest `lag / timeframe` among those jobs: how many candles behind the most stale one is
   * (a 1d job 2 h behind is fine, a 1m job 2 h behind is not). Null when no job has a cursor.
   */
  maxCadenceRatio: number | null;
  /** Enabled ohlcv jobs considered. */
  jobs: number;
  /** Enabled ohlcv jobs that have no cursor yet (nothing collected); they are not in `maxMs`. */
  withoutCursor: number;
}

export interface VenueStatus {
  venue: string;
  status: ConnectorStatus;
  /** The connector's fleet-wide in-flight cap. */
  maxInflight: number;
  /** Fleet-wide AIMD concurrency now, between its floor and ceiling. */
  concurrency: { current: number; min: number; max: number };
  /** The queue's BullMQ global concurrency (what workers obey), null when unset. */
  globalConcurrency: number | null;
  budget: VenueBudgetStatus | null;
  /** Null when the venue is not frozen. */
  freeze: VenueFreezeStatus | null;
  queue: UnitCounts;
  /**
   * Budget-aware autoscaling signal: waiting units (waiting + prioritized) that could start now —
   * the connector is active, the venue is not frozen and its budget has room — capped by the
   * weight left in the window (every unit spends at least one). More workers help only these.
   */
  runnable: number;
  /** Waiting units held back by a freeze, an exhausted budget or a paused connector: more workers cannot help. */
  blocked: number;
  cursorLag: VenueCursorLag;
  /**
   * Open records of the gap ledger for the venue's jobs and streams: holes inside what was
   * requested (backfills, live ranges) and unhealed stream trade ids. History never requested is
   * not a gap and not counted (`tickfleet data count` reports it apart).
   */
  openGaps: number;
  /** Workers that beat for this venue recently; null when no heartbeat source was given. */
  liveWorkers: number | null;
  /**
   * How the venue is doing, judged from the fleet's recent unit outcomes, its status and freeze
   * (`venueHealth` of @tickfleet/budget): state, one-line reason, the window's outcomes by cause and
   * the last error's cause, time and message.
   */
  health: VenueHealth;
  /** Jobs held by a scheduler lease, filled from one grouped store read by collectFleetStatus. */
  leases: VenueLeases;
  /** The connector's jobs (the design's `jobs_count`), from one grouped store read like `leases`. */
  jobsCount: number;
  /** Its enabled jobs (the design's `active_jobs_count`). */
  activeJobsCount: number;
  /** When a unit of one of its jobs last ended, ok or failed (epoch ms; the design's `last_job_run_time`); null when none has. */
  lastJobRunAt: number | null;
}

/**
 * Jobs of a venue held by a scheduler lease: claimed, their unit not ended yet. A held job is not
 * claimed again before its lease ends (a restarted fleet's scheduler ends a stopped one's at once).
 */
export interface VenueLeases {
  /** Jobs whose lease has not ended. */
  jobs: number;
  /** When the latest of those leases ends (epoch ms); null without any. */
  untilMs: number | null;
}

export interface FleetStatus {
  atMs: number;
  venues: VenueStatus[];
  spool: SpoolDepth | null;
  /** Every stream definition with its holder, live state and unhealed trade gaps; null when no stream source was given. */
  streams: StreamStatus[] | null;
  /** The book loop of every connector that has one (holders, shares, achieved cadence, budget spent); null without the stream source's Redis. */
  bookLoops: BookLoopStatus[] | null;
  totals: { runnable: number; blocked: number; waiting: number; active: number; delayed: number; failed: number; openGaps: number; frozenVenues: number };
}

/** The venue part of an open gap's job id (`binance:BTC/USDT:1m:ohlcv` -> `binance`). */
function venueOfJobId(jobId: string): string {
  const i = jobId.indexOf(':');
  return i < 0 ? jobId : jobId.slice(0, i);
}

function cursorLag(jobs: readonly Job[], now: number): VenueCursorLag {
  let maxMs: number | null = null;
  let jobId: string | null = null;
  let maxCadenceRatio: number | null = null;
  let withoutCursor = 0;
  let considered = 0;
  for (const job of jobs) {
    if (!job.enabled || job.type !== 'ohlcv' || job.timeframe === null) continue;
    considered++;
    if (job.cursor === null) {
      withoutCursor++;
      continue;
    }
    const cadenceMs = timeframeMs(job.timeframe);
    // Age of the next candle the venue's calendar expects after the cursor (cursor + timeframe on
    // 24/7 venues): US-equity jobs do not lag over nights, weekends and holidays.
    const lag = Math.max(0, now - calendarFor(job.venue).nextExpectedOpen(job.timeframe, job.cursor));
    if (maxCadenceRatio === null || lag / cadenceMs > maxCadenceRatio) maxCadenceRatio = lag / cadenceMs;
    if (maxMs === null || lag > maxMs) {
      maxMs = lag;
      jobId = job.id;
    }
  }
  return { maxMs, jobId, maxCadenceRatio, jobs: considered, withoutCursor };
}

async function venueStatus(sources: FleetStatusSources, connector: Connector, jobs: readonly Job[], openGaps: number, now: number): Promise<VenueStatus> {
  const { store, queues, control, liveness } = sources;
  const venue = connector.venue;
  // The dashboard may run without any worker having configured this venue's limits in memory;
  // the connector is the source of the AIMD floor and ceiling.
  control.configure(venue, aimdLimitsFor(connector));
  const [snapshot, usage, counts, globalConcurrency, live, health] = await Promise.all([
    control.snapshot(venue),
    store.budgets.usage(venue),
    queues.counts(venue),
    queues.globalConcurrency(venue),
    liveness ? liveness.liveWorkers(venue) : Promise.resolve(null),
    control.health(venue, connector.status),
  ]);

  // The venue's one freeze record (the queue limiter BullMQ obeys is derived from it by
  // FleetVenueControl.freeze, so it says nothing the record does not).
  const frozen = snapshot.frozen;
  const freeze: VenueFreezeStatus | null =
    frozen && frozen.untilMs > now ? { cause: frozen.cause, untilMs: frozen.untilMs, remainingMs: frozen.untilMs - now } : null;

  const budget: VenueBudgetStatus | null = usage
    ? {
        policy: usage.policy,
        used: usage.used,
        limit: usage.limit,
        remaining: Math.max(0, Math.floor(usage.limit - usage.used)),
        periodMs: usage.periodMs,
        windowStartMs: usage.windowStartMs,
        resetAtMs: usage.resetAtMs,
      }
    : null;

  const pending = counts.waiting + counts.prioritized;
  const canRun = venueHold(connector.status, freeze?.untilMs ?? null, now) === null && (budget === null || budget.remaining > 0);
  const runnable = canRun ? Math.min(pending, budget?.remaining ?? pending) : 0;

  return {
    venue,
    status: connector.status,
    maxInflight: connector.maxInflight,
    concurrency: { current: snapshot.concurrency, min: snapshot.min, max: snapshot.max },
    globalConcurrency,
    budget,
    freeze,
    queue: counts,
    runnable,
    blocked: pending - runnable,
    cursorLag: cursorLag(jobs, now),
    openGaps,
    liveWorkers: live,
    health,
    leases: { jobs: 0, untilMs: null },
    jobsCount: 0,
    activeJobsCount: 0,
    lastJobRunAt: null,
  };
}

/** Sets each venue's scheduler leases from the store's per-venue and holder counts. */
function addLeases(venues: VenueStatus[], leases: readonly JobLeases[]): void {
  const byVenue = new Map(venues.map((v) => [v.venue, v]));
  for (const l of leases) {
    const v = byVenue.get(l.venue);
    if (!v) continue;
    v.leases = { jobs: v.leases.jobs + l.jobs, untilMs: Math.max(v.leases.untilMs ?? 0, l.untilMs) };
  }
}

/** Sets each venue's job counts and last run from the store's per-venue counts (venues without jobs keep 0 and null). */
function addJobCounts(venues: VenueStatus[], counts: readonly ConnectorJobCounts[]): void {
  const byVenue = new Map(counts.map((c) => [c.venue, c]));
  for (const v of venues) {
    const c = byVenue.get(v.venue);
    if (c) Object.assign(v, { jobsCount: c.jobsCount, activeJobsCount: c.activeJobsCount, lastJobRunAt: c.lastJobRunAt });
  }
}

/**
 * One snapshot of the fleet for the dashboard, `tickfleet status` and the autoscaling gauges:
 * per venue (every connector in the store, by name) its status, health, budget window, freeze,
 * AIMD concurrency, queue depth by state, runnable vs blocked units, oldest cursor lag, open gaps,
 * live workers, and its jobs (count, enabled, last run); plus the spool depth on this machine and, given a stream source, every stream
 * with its holder and live state.
 */
export async function collectFleetStatus(sources: FleetStatusSources): Promise<FleetStatus> {
  const now = sources.now ?? Date.now();
  const [connectors, jobs, gaps, streamDefs] = await Promise.all([
    sources.store.connectors.list(),
    sources.store.jobs.list({ type: 'ohlcv', enabled: true }),
    sources.store.gaps.list({ open: true }),
    sources.streams ? sources.store.streams.list() : Promise.resolve([]),
  ]);
  const jobsByVenue = new Map<string, Job[]>();
  for (const job of jobs) {
    const list = jobsByVenue.get(job.venue) ?? [];
    list.push(job);
    jobsByVenue.set(job.venue, list);
  }
  const gapsByVenue = new Map<string, number>();
  for (const gap of gaps) {
    const v = venueOfJobId(gap.jobId);
    gapsByVenue.set(v, (gapsByVenue.get(v) ?? 0) + 1);
  }
  const sorted = [...connectors].sort((a, b) => a.venue.localeCompare(b.venue));
  const [venues, streams, bookLoops] = await Promise.all([
    Promise.all(sorted.map((c) => venueStatus(sources, c, jobsByVenue.get(c.venue) ?? [], gapsByVenue.get(c.venue) ?? 0, now))),
    sources.streams ? collectStreamStatus(streamDefs, gaps, sources.streams) : Promise.resolve(null),
    sources.streams ? collectBookLoopStatus(sorted, sources.streams, now) : Promise.resolve(null),
  ]);
  const [leases, jobCounts] = await Promise.all([sources.store.jobs.leases(now), sources.store.jobs.countsByVenue()]);
  addLeases(venues, leases);
  addJobCounts(venues, jobCounts);
  const sum = (f: (v: VenueStatus) => number): number => venues.reduce((n, v) => n + f(v), 0);
  return {
    atMs: now,
    venues,
    spool: sources.spoolDir === undefined ? null : spoolDepth(sources.spoolDir),
    streams,
    bookLoops,
    totals: {
      runnable: sum((v) => v.runnable),
      blocked: sum((v) => v.blocked),
      waiting: sum((v) => v.queue.waiting + v.queue.prioritized),
      active: sum((v) => v.queue.active),
      delayed: sum((v) => v.queue.delayed),
      failed: sum((v) => v.queue.failed),
      openGaps: sum((v) => v.openGaps),
      frozenVenues: sum((v) => (v.freeze ? 1 : 0)),
    },
  };
}
