import { BudgetExhaustedError, type Clock, isTickfleetError, StoreUnavailableError } from '@tickfleet/core';
import type { StateStore } from '@tickfleet/store';
import type { AfterResponseInfo, BeforeRequestInfo, RequestHooks } from '@tickfleet/venues';
import type { WorkerMetrics } from './worker-metrics.js';

/** What the gate needs to know about fleet-wide venue state (freezes live in Redis). */
export interface FreezeSource {
  /** Remaining fleet-wide freeze of the venue in ms (0 when not frozen). */
  frozenForMs(venue: string): Promise<number>;
}

/** In-process allowance used only while the state store is unreachable. */
export interface FallbackBudget {
  tryAcquire(venue: string, weight: number): { ok: true } | { ok: false; retryAtMs: number };
}

export interface BudgetGateOptions {
  store: StateStore;
  freezes: FreezeSource;
  clock: Clock;
  metrics: WorkerMetrics;
  /** Fallback while the store is unreachable; without one, an unreachable store fails the request. */
  fallback?: FallbackBudget;
  /**
   * A refusal whose retry time is at most this far away waits in-process instead of yielding the
   * unit (moving a unit to delayed and back costs more than a short sleep). @defaultValue 1000
   */
  maxInlineWaitMs?: number;
  /** Called after each successful store round trip (ends a fallback period). */
  onStoreReachable?: (venue: string) => void;
  /** Called with each response, for AIMD and statistics. */
  onResponse?: (info: AfterResponseInfo) => void | Promise<void>;
}

/** How long a unit of a paused or disabled venue waits before it looks again. */
const PAUSED_RECHECK_MS = 5000;

/**
 * Spends a request's weight from the venue's shared budget before every upstream request.
 * A frozen venue or a spent budget raises BudgetExhaustedError with the time to come back, so
 * the unit yields its slot (moves itself to delayed) instead of sleeping in it; a refusal that
 * clears within `maxInlineWaitMs` is waited out in place. After each response, weight the venue
 * reports (`X-MBX-USED-WEIGHT-1M`) raises the shared count, so traffic from other clients on the
 * same IP is accounted for.
 */
export class BudgetGate {
  private readonly maxInlineWaitMs: number;
  /** Per venue: the window of our latest grant and the shared usage the store reported then. */
  private readonly lastGrant = new Map<string, { windowStartMs: number; used: number }>();

  constructor(private readonly options: BudgetGateOptions) {
    this.maxInlineWaitMs = options.maxInlineWaitMs ?? 1000;
  }

  /** Request hooks for one venue adapter. */
  hooks(): RequestHooks {
    return {
      beforeRequest: (info) => this.beforeRequest(info),
      afterResponse: (info) => this.afterResponse(info),
    };
  }

  async beforeRequest({ venue, weight }: BeforeRequestInfo): Promise<void> {
    const { clock, freezes } = this.options;
    for (;;) {
      const frozenMs = await freezes.frozenForMs(venue);
      if (frozenMs > 0) throw new BudgetExhaustedError(venue, clock.now() + frozenMs);
      const result = await this.acquire(venue, weight);
      if (result.ok) return;
      const waitMs = result.retryAtMs - clock.now();
      if (waitMs > this.maxInlineWaitMs) {
        this.options.metrics.budgetYields.inc({ venue });
        throw new BudgetExhaustedError(venue, result.retryAtMs);
      }
      this.options.metrics.budgetWaits.inc({ venue });
      await sleep(Math.max(1, waitMs));
    }
  }

  async afterResponse(info: AfterResponseInfo): Promise<void> {
    const { metrics, store } = this.options;
    metrics.requestSeconds.observe({ venue: info.venue, endpoint: info.endpoint }, info.latencyMs / 1000);
    metrics.responses.inc({ venue: info.venue, status: statusClass(info.status) });
    if (info.usedWeight !== undefined && info.usedWeightWindowStartMs !== undefined && this.venueReportsMore(info.venue, info.usedWeight, info.usedWeightWindowStartMs)) {
      try {
        await store.budgets.observe(info.venue, info.usedWeight, info.usedWeightWindowStartMs);
      } catch (err) {
        if (!isTickfleetError(err) || err.code !== 'E_STORE_UNAVAILABLE') throw err;
      }
    }
    await this.options.onResponse?.(info);
  }

  /**
   * Whether a venue's used-weight report can raise the shared count. Within one window the store's
   * count only grows, so a report no higher than the count at our latest grant in that window
   * would be a no-op write; skipping it saves a store round trip on most responses.
   */
  private venueReportsMore(venue: string, usedWeight: number, windowStartMs: number): boolean {
    const last = this.lastGrant.get(venue);
    if (!last || last.windowStartMs !== windowStartMs) return true;
    if (usedWeight <= last.used) return false;
    last.used = usedWeight;
    return true;
  }

  private async acquire(venue: string, weight: number): Promise<{ ok: true } | { ok: false; retryAtMs: number }> {
    const { store, fallback, metrics } = this.options;
    try {
      const r = await store.budgets.acquire(venue, weight);
      metrics.fallbackActive.set({ venue }, 0);
      this.options.onStoreReachable?.(venue);
      if (r.ok) {
        if (r.windowStartMs !== undefined) this.lastGrant.set(venue, { windowStartMs: r.windowStartMs, used: r.used });
        metrics.budgetUsed.set({ venue }, r.used);
        metrics.budgetLimit.set({ venue }, r.limit);
        return { ok: true };
      }
      if (r.reason !== 'exhausted') {
        // Paused, disabled or unknown venue (or a request heavier than the whole window): yield the
        // unit for a while instead of polling the store from a held slot.
        throw new BudgetExhaustedError(venue, Math.max(r.retryAtMs, this.options.clock.now() + PAUSED_RECHECK_MS));
      }
      return { ok: false, retryAtMs: r.retryAtMs };
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || !fallback) throw err;
      metrics.fallbackActive.set({ venue }, 1);
      return fallback.tryAcquire(venue, weight);
    }
  }
}

function statusClass(status: number): string {
  if (status === 0) return 'none';
  if (status === 429 || status === 418) return String(status);
  return `${Math.floor(status / 100)}xx`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
