import { bookLoopKey, type BookLoopReport, type Connector } from '@tickfleet/core';
import { StreamLeases } from '@tickfleet/streams';
import type { StreamStatusSource } from './stream-status.js';

/** A report older than this many of its intervals is from a worker gone (its shares moved since). */
const STALE_INTERVALS = 3;

/** One worker holding shares of a venue's book loop: its leases now and what it last reported. */
export interface BookLoopHolder {
  workerId: string;
  /** Shares it holds now (from the leases). */
  shares: number[];
  /** Its last report, or null when it has not reported yet (or the report is stale). */
  report: BookLoopReport | null;
}

/** A venue's book loop: settings, holders, the achieved cadence and the budget it spends. */
export interface BookLoopStatus {
  venue: string;
  cadenceMs: number;
  shares: number;
  /** Shares no worker holds now. */
  unheld: number[];
  holders: BookLoopHolder[];
  /** Over the holders' last reports: the largest p50 and p95 age of an instrument's newest snapshot (the achieved cadence). */
  p50AgeMs: number | null;
  p95AgeMs: number | null;
  /** Summed over the holders' last reports, per second: books stored, unchanged books, requests, budget weight. */
  booksPerS: number;
  unchangedPerS: number;
  requestsPerS: number;
  weightPerS: number;
}

/** The book loop of every connector that has one: leases (group `bookloop`) and each holder's last report (`book-loop:live`). */
export async function collectBookLoopStatus(connectors: readonly Connector[], source: StreamStatusSource, now: number): Promise<BookLoopStatus[]> {
  const looped = connectors.filter((c) => c.bookLoop);
  if (looped.length === 0) return [];
  const leases = await new StreamLeases(source.redis, 'status-reader', { prefix: source.prefix, group: 'bookloop' }).holders();
  return Promise.all(
    looped.map(async (c) => {
      const settings = c.bookLoop!;
      const raw = await source.redis.hgetall(bookLoopKey(source.prefix, c.venue, 'live'));
      const reports = new Map<string, BookLoopReport>();
      for (const [worker, json] of Object.entries(raw)) {
        const r = JSON.parse(json) as BookLoopReport;
        if (now - r.atMs <= STALE_INTERVALS * Math.max(r.intervalMs, 1000)) reports.set(worker, r);
      }
      const byWorker = new Map<string, number[]>();
      for (const [name, h] of leases) {
        const m = /^(.+)\/(\d+)$/.exec(name);
        if (m?.[1] !== c.venue) continue;
        byWorker.set(h.worker, [...(byWorker.get(h.worker) ?? []), Number(m[2])]);
      }
      const held = new Set([...byWorker.values()].flat());
      const holders = [...byWorker].map(([workerId, shares]) => ({ workerId, shares: shares.sort((a, b) => a - b), report: reports.get(workerId) ?? null }));
      const live = holders.map((h) => h.report).filter((r): r is BookLoopReport => r !== null);
      const max = (f: (r: BookLoopReport) => number | null): number | null =>
        live.reduce<number | null>((m, r) => (f(r) === null ? m : Math.max(m ?? 0, f(r)!)), null);
      const rate = (f: (r: BookLoopReport) => number): number => live.reduce((n, r) => n + (r.intervalMs > 0 ? (f(r) * 1000) / r.intervalMs : 0), 0);
      return {
        venue: c.venue,
        cadenceMs: settings.cadenceMs,
        shares: settings.shares,
        unheld: Array.from({ length: settings.shares }, (_, i) => i).filter((i) => !held.has(i)),
        holders: holders.sort((a, b) => a.workerId.localeCompare(b.workerId)),
        p50AgeMs: max((r) => r.p50AgeMs),
        p95AgeMs: max((r) => r.p95AgeMs),
        booksPerS: rate((r) => r.books),
        unchangedPerS: rate((r) => r.unchanged),
        requestsPerS: rate((r) => r.requests),
        weightPerS: rate((r) => r.weight),
      };
    }),
  );
}
