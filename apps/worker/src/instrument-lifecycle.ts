import { jobId as makeJobId, type Envelope, type Job, marketEnvelope, type MarketRecord } from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';
import type { Instrument, MarketMeta } from '@tickfleet/venues';
import type { ActiveInstrument, ActiveSet, ActiveSets } from './active-set.js';

/**
 * How long an instrument whose market has no known expiry stays in the set after discovery last
 * listed it. Instruments with an expiry stay until it passes, listed or not (sticky).
 */
export const UNDATED_RETENTION_MS = 24 * 3600_000;

export interface Retired {
  instrument: ActiveInstrument;
  reason: string;
}

/** The next active set of a venue and how its membership changed. */
export interface SetChange {
  next: ActiveSet;
  listed: ActiveInstrument[];
  retired: Retired[];
}

/**
 * The venue's next active set from the set in force and one discovery's listing, at `nowMs`:
 * - a listed instrument whose market has not expired is in the set (joining it if new);
 * - an instrument the listing left out stays (sticky) until its market's expiry, or, with no
 *   expiry known, until {@link UNDATED_RETENTION_MS} after it was last listed;
 * - an instrument whose market expired leaves the set, listed or not.
 */
export function nextActiveSet(venue: string, prev: ActiveSet | null, listing: readonly Instrument[], nowMs: number): SetChange {
  const before = prev?.instruments ?? {};
  const instruments: Record<string, ActiveInstrument> = {};
  const listed: ActiveInstrument[] = [];
  const retired: Retired[] = [];
  const expired = (m: MarketMeta): boolean => m.expiresAtMs !== undefined && m.expiresAtMs <= nowMs;
  for (const inst of listing) {
    const market = inst.market ?? { marketId: inst.symbol, outcomes: [], tokenIds: [] };
    const old = before[inst.symbol];
    if (expired(market)) {
      if (old) retired.push({ instrument: { ...old, market }, reason: `market ${market.marketId} expired at ${new Date(market.expiresAtMs!).toISOString()}` });
      continue;
    }
    const entry: ActiveInstrument = { symbol: inst.symbol, market, listedAtMs: old?.listedAtMs ?? nowMs, lastSeenMs: nowMs };
    instruments[inst.symbol] = entry;
    if (!old) listed.push(entry);
  }
  for (const old of Object.values(before)) {
    if (instruments[old.symbol] || retired.some((r) => r.instrument.symbol === old.symbol)) continue;
    if (expired(old.market)) {
      retired.push({ instrument: old, reason: `market ${old.market.marketId} expired at ${new Date(old.market.expiresAtMs!).toISOString()}` });
    } else if (old.market.expiresAtMs === undefined && nowMs - old.lastSeenMs >= UNDATED_RETENTION_MS) {
      retired.push({ instrument: old, reason: `market ${old.market.marketId} not listed since ${new Date(old.lastSeenMs).toISOString()} and has no expiry` });
    } else {
      instruments[old.symbol] = old; // missing from this listing: sticky until its expiry
    }
  }
  return { next: { venue, version: (prev?.version ?? 0) + 1, atMs: nowMs, instruments }, listed, retired };
}

export interface DiscoveryResult {
  version: number;
  active: number;
  listed: number;
  retired: number;
  /** The `markets` records of the change (already persisted when `refresh` returns). */
  records: Envelope[];
}

export interface LifecycleDeps {
  store: StateStore;
  activeSets: ActiveSets;
  /** Persists records durably (the unit's pipeline), before the set is swapped. */
  persist(envelopes: Envelope[]): Promise<void>;
  /** Keeps a copy of the set just swapped in where users' tools read it (a JSONL sink's `state/`). */
  snapshot?(set: ActiveSet): Promise<void>;
}

/**
 * Discovery's slow path for one venue: computes the next active set from a listing, stores the
 * metadata of every membership change (`markets` records), swaps the set atomically, then brings
 * the store's book jobs in line (new instruments get an enabled job; retired ones are disabled
 * with the reason as the job's last error). A listing that failed never gets here, so the set in
 * force stays. Records come first: a crash after them re-runs the same change (same version), whose
 * records dedup; a crash after the swap leaves jobs behind, which the next discovery aligns (and
 * pollers go by the set, not the jobs).
 */
export async function refreshActiveSet(deps: LifecycleDeps, job: Job, listing: readonly Instrument[], nowMs: number): Promise<DiscoveryResult> {
  const { store, activeSets } = deps;
  const venue = job.venue;
  const prev = (await activeSets.read(venue)) ?? (await bootstrapFromJobs(store, venue, nowMs));
  const change = nextActiveSet(venue, prev, listing, nowMs);
  const version = change.next.version;
  const records = [
    ...change.listed.map((i) => marketEnvelope(marketRecord(venue, i, 'listed', version), nowMs)),
    ...change.retired.map((r) => marketEnvelope(marketRecord(venue, r.instrument, 'retired', version, r.reason), nowMs)),
  ];
  await deps.persist(records);
  await activeSets.swap(venue, prev?.version ?? 0, change.next);
  await deps.snapshot?.(change.next);

  for (const inst of Object.values(change.next.instruments)) {
    const id = makeJobId({ venue, type: 'book', symbol: inst.symbol });
    const existing = await store.jobs.get(id);
    if (!existing) await store.jobs.upsert({ venue, type: 'book', symbol: inst.symbol, priority: job.priority, nextRunAt: nowMs });
    else if (!existing.enabled) await store.jobs.setEnabled(id, true);
  }
  for (const r of change.retired) {
    const id = makeJobId({ venue, type: 'book', symbol: r.instrument.symbol });
    if (!(await store.jobs.get(id))) continue;
    await store.jobs.setEnabled(id, false);
    // The reason shows as the job's last error (`tickfleet jobs show`).
    await store.jobs.fail(id, `retired: ${r.reason}`, nowMs);
  }
  return { version, active: Object.keys(change.next.instruments).length, listed: change.listed.length, retired: change.retired.length, records };
}

/**
 * A venue without a stored set (first discovery, or Redis lost its data) starts from its enabled
 * book jobs, so instruments the store already polls stay sticky instead of being dropped by one
 * short listing; their markets are unknown until a discovery lists them again.
 */
async function bootstrapFromJobs(store: StateStore, venue: string, nowMs: number): Promise<ActiveSet | null> {
  const jobs = await store.jobs.list({ venue, type: 'book', enabled: true });
  if (jobs.length === 0) return null;
  const instruments: Record<string, ActiveInstrument> = {};
  for (const j of jobs)
    instruments[j.symbol] = { symbol: j.symbol, market: { marketId: j.symbol, outcomes: [], tokenIds: [] }, listedAtMs: nowMs, lastSeenMs: nowMs };
  return { venue, version: 0, atMs: nowMs, instruments };
}

function marketRecord(venue: string, inst: ActiveInstrument, event: MarketRecord['event'], version: number, reason?: string): MarketRecord {
  const m = inst.market;
  return {
    venue,
    symbol: inst.symbol,
    event,
    version,
    marketId: m.marketId,
    ...(m.slug === undefined ? {} : { slug: m.slug }),
    ...(m.title === undefined ? {} : { title: m.title }),
    outcomes: m.outcomes,
    tokenIds: m.tokenIds,
    expiresAtMs: m.expiresAtMs ?? null,
    ...(reason === undefined ? {} : { reason }),
  };
}
