import { BudgetExhaustedError, type Clock, isTickfleetError, StoreUnavailableError } from '@tickfleet/core';
import { type AcquireResult, CLOCK_SKEW_TOLERANCE_MS, type StateStore } from '@tickfleet/store';
import type { Logger } from '@tickfleet/telemetry';
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
  /** Whether the venue is budgeted locally now (the store failed and has not answered since). */
  isActive(venue: string): boolean;
  /** The store answered again: the shared budget takes over. */
  deactivate(venue: string): void;
  /** Weight every live worker together may have spent locally in one window (limit-bounded). */
  fleetAllowance(venue: string): number;
  /**
   * End (epoch ms) of the latest window in which any worker of the fleet spent weight from its
   * fallback share (shared through Redis, which stays up while the store is away); 0 when none.
   */
  fleetFallbackUntil(venue: string): Promise<number>;
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
  /** Called with each response, for AIMD and statistics. */
  onResponse?: (info: AfterResponseInfo) => void | Promise<void>;
  /** For the clock-skew and fallback warnings (one line per change of state, never per request). */
  logger?: Logger;
}

/** How long a unit of a paused or disabled venue waits before it looks again. */
const PAUSED_RECHECK_MS = 5000;

/**
 * The last stretch of a fixed window in which no request is sent: 5% of the period, at most 1 s
 * (500 ms of a 10 s window, 1 s of Binance's minute). A venue counts a request in the window it
 * arrives in, so a grant made just before a boundary would land uncounted in the next window
 * (measured: with 6 units in flight and a 120-weight window, one request in ~5 loaded runs went
 * over the limit that way, more than the 95% headroom absorbs). Requests wait out the stretch
 * instead, and a grant the store made inside it is left spent (never over-counting the venue's
 * window, at worst under-using it) and taken again in the next window.
 */
export function boundaryGuardMs(periodMs: number): number {
  return Math.min(1000, Math.floor(periodMs * 0.05));
}

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
  /** Per venue: whether the latest store answer said this worker's clock is off the budget's timeline. */
  private readonly skewed = new Map<string, boolean>();
  /** Per venue: the fleet-fallback window end this worker already marked spent in the store. */
  private readonly markedSpent = new Map<string, number>();
  /** Per venue: where the current window's boundary guard starts and ends, on this worker's clock. */
  private readonly guardBand = new Map<string, { fromMs: number; toMs: number }>();

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
      const band = this.guardBand.get(venue);
      const now = clock.now();
      if (band && now >= band.fromMs && now < band.toMs) {
        // Inside the boundary guard (at most 1 s): the request goes out in the next window.
        this.options.metrics.budgetWaits.inc({ venue });
        await sleep(band.toMs - now);
        continue;
      }
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
      if (fallback?.isActive(venue)) {
        await this.endFallback(venue, fallback);
      } else if (fallback) {
        // Another worker may still be (or just have been) on its fallback share in this window:
        // the store does not know that weight, so the window is marked spent before using it.
        const until = await fallback.fleetFallbackUntil(venue);
        if (until > this.options.clock.now() && this.markedSpent.get(venue) !== until) {
          await this.markWindowSpent(venue, fallback);
          this.markedSpent.set(venue, until);
        }
      }
      const r = await store.budgets.acquire(venue, weight);
      metrics.fallbackActive.set({ venue }, 0);
      this.noteClockOffset(venue, r);
      if (r.ok) {
        if (r.windowStartMs !== undefined) this.lastGrant.set(venue, { windowStartMs: r.windowStartMs, used: r.used });
        metrics.budgetUsed.set({ venue }, r.used);
        metrics.budgetLimit.set({ venue }, r.limit);
        if (r.windowStartMs !== undefined && r.windowEndMs !== undefined) {
          // The store's window, placed on this worker's clock by the decision's distance to its end.
          const leftMs = r.windowEndMs - r.atMs;
          const guardMs = boundaryGuardMs(r.windowEndMs - r.windowStartMs);
          const endLocalMs = this.options.clock.now() + leftMs;
          this.guardBand.set(venue, { fromMs: endLocalMs - guardMs, toMs: endLocalMs });
          if (leftMs < guardMs) return { ok: false, retryAtMs: endLocalMs };
        }
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
      if (!fallback.isActive(venue)) this.options.logger?.warn({ venue, err: err.message }, 'state store unavailable: budgeting locally on this worker\'s share (limit / live workers)');
      metrics.fallbackActive.set({ venue }, 1);
      return fallback.tryAcquire(venue, weight);
    }
  }

  /**
   * The store answers again after a fallback period. The shared window it is in knows nothing of
   * what the workers spent locally meanwhile (they may have spent up to the whole limit between
   * them), so before taking shared weight again this worker marks that window as spent by the
   * fleet's fallback allowance. Every recovering worker does the same, idempotently (observe only
   * raises a window). The cost is at most the rest of one window unused after an outage.
   */
  private async endFallback(venue: string, fallback: FallbackBudget): Promise<void> {
    const { metrics, clock } = this.options;
    await this.markWindowSpent(venue, fallback);
    fallback.deactivate(venue);
    metrics.fallbackActive.set({ venue }, 0);
    this.options.logger?.info({ venue, resumedAt: new Date(clock.now()).toISOString() }, 'state store reachable again: shared budget resumed');
  }

  /** Raises the store's current window by the fleet's fallback allowance (at most to the limit). */
  private async markWindowSpent(venue: string, fallback: FallbackBudget): Promise<void> {
    const { store } = this.options;
    const usage = await store.budgets.usage(venue);
    if (!usage) return;
    const allowance = Math.min(usage.limit, fallback.fleetAllowance(venue));
    if (usage.policy === 'fixed-window' && usage.windowStartMs !== null) {
      await store.budgets.observe(venue, Math.min(usage.limit, usage.used + allowance), usage.windowStartMs);
    } else if (allowance > 0) {
      await store.budgets.acquire(venue, allowance);
    }
  }

  /** Exports how far this worker's clock is off the budget's timeline, and warns once per change. */
  private noteClockOffset(venue: string, r: AcquireResult): void {
    const offsetMs = r.clockOffsetMs ?? 0;
    this.options.metrics.budgetClockOffset.set({ venue }, offsetMs / 1000);
    const skewed = Math.abs(offsetMs) > CLOCK_SKEW_TOLERANCE_MS;
    if (skewed === (this.skewed.get(venue) ?? false)) return;
    this.skewed.set(venue, skewed);
    if (skewed) {
      this.options.logger?.warn({ venue, offsetMs }, "this worker's clock is off the venue budget's timeline: retry times are translated onto it; fix the host's time sync");
    } else {
      this.options.logger?.info({ venue }, "this worker's clock agrees with the venue budget's timeline again");
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
