import { type AfterResponseInfo, type BeforeRequestInfo, BudgetExhaustedError, type Clock, RequestTooHeavyError, StoreUnavailableError } from '@tickfleet/core';
import type { Logger } from '@tickfleet/telemetry';
import { CLOCK_SKEW_TOLERANCE_MS } from './acquire-math.js';
import { BUDGET_DEFAULTS } from './budget-defaults.js';
import type { AcquireResult, BudgetsRepo } from './budget-types.js';
import { CoalescedAcquires } from './coalesced-acquires.js';
import type { ScopedBudgets } from './scoped-budgets.js';
import type { FallbackBudget } from './store-outage-fallback.js';
import { venueHold } from './venue-control/venue-status.js';

/** What the gate needs to know about fleet-wide venue state (`FleetVenueControl` reads the freeze record). */
export interface FreezeSource {
  /** Remaining fleet-wide freeze of the venue in ms (0 when not frozen). */
  frozenForMs(venue: string): Promise<number>;
  /** The fleet's fallback mark ({@link FallbackBudget.fleetFallbackUntil}) when this source keeps it too (`FreezeWatch`). */
  fleetFallbackUntil?(venue: string): Promise<number>;
}

type Labels<L extends string> = Partial<Record<L, string | number>>;
interface CounterLike<L extends string> {
  inc(labels: Labels<L>, value?: number): void;
}
interface GaugeLike<L extends string> {
  set(labels: Labels<L>, value: number): void;
}
interface HistogramLike<L extends string> {
  observe(labels: Labels<L>, value: number): void;
}

/** The series the gate writes (names in the telemetry metric catalog; the worker's `WorkerMetrics` has them all). */
export interface BudgetGateMetrics {
  /** `tickfleet_request_duration_seconds` */
  requestSeconds: HistogramLike<'venue' | 'endpoint'>;
  /** `tickfleet_responses_total` */
  responses: CounterLike<'venue' | 'status'>;
  /** `tickfleet_budget_used` */
  budgetUsed: GaugeLike<'venue'>;
  /** `tickfleet_budget_limit` */
  budgetLimit: GaugeLike<'venue'>;
  /** `tickfleet_budget_yields_total` */
  budgetYields: CounterLike<'venue'>;
  /** `tickfleet_budget_waits_total` */
  budgetWaits: CounterLike<'venue'>;
  /** `tickfleet_budget_fallback_active` */
  fallbackActive: GaugeLike<'venue'>;
  /** `tickfleet_budget_clock_offset_seconds` */
  budgetClockOffset: GaugeLike<'venue'>;
}

export interface BudgetGateOptions {
  /** The shared budgets (the state store's `budgets`). */
  budgets: BudgetsRepo;
  freezes: FreezeSource;
  clock: Clock;
  metrics: BudgetGateMetrics;
  /**
   * Budgets of venues whose requests name a scope (Xetra's markets): a request that names a `scope`
   * spends from that scope's budget and the venue's aggregate over all its scopes (one Lua step)
   * instead of the store's venue budget. Without them, every request spends from its venue's.
   */
  scopes?: Pick<ScopedBudgets, 'acquire'>;
  /** Fallback while the store is unreachable; without one, an unreachable store fails the request. */
  fallback?: FallbackBudget;
  /** A refusal whose retry time is at most this far away waits in-process instead of yielding the unit. @defaultValue BUDGET_DEFAULTS.maxInlineWaitMs */
  maxInlineWaitMs?: number;
  /** For the clock-skew and fallback warnings (one line per change of state, never per request). */
  logger?: Logger;
}

/**
 * Weight a unit spent from its venue's budget before its first request (the design's
 * `try_consume(vendor, tokens)` before submission), which its requests then use instead of one
 * acquire each ({@link BudgetGate.reserve}). Valid only within the fixed window it was charged in,
 * up to that window's boundary guard: sent later, the venue would count it in a window the shared
 * budget does not.
 */
export interface BudgetReservation {
  venue: string;
  /** Weight left to spend. */
  tokens: number;
  /** On this worker's clock: after this the rest is void (left spent) and requests acquire again. */
  untilMs: number;
}

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
 * same IP is accounted for. A venue's acquires of one event-loop turn past the first four are
 * spent as one acquire of their sum ({@link CoalescedAcquires}).
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
  /** The requests' acquires: of a venue's in one event-loop turn, those past the first four spent as one. */
  private readonly acquires: CoalescedAcquires;

  constructor(private readonly options: BudgetGateOptions) {
    this.maxInlineWaitMs = options.maxInlineWaitMs ?? BUDGET_DEFAULTS.maxInlineWaitMs;
    this.acquires = new CoalescedAcquires(options.budgets);
  }

  /**
   * Spends `weight` from the venue's budget before one request is sent: returns when the request
   * may go, throws BudgetExhaustedError (yield the unit until its `retryAtMs`) or
   * RequestTooHeavyError (the request can never fit the venue's window).
   */
  async beforeRequest({ venue, weight, scope }: BeforeRequestInfo): Promise<void> {
    await this.spend(venue, weight, scope);
  }

  /**
   * Takes one request's weight from the unit's `reservation` instead of the budget, after the
   * freeze check (a frozen venue throws BudgetExhaustedError as {@link beforeRequest} does).
   * False when the reservation cannot cover it (spent, expired, another venue, a scoped request):
   * then the request goes through {@link beforeRequest}.
   */
  async fromReservation({ venue, weight, scope }: BeforeRequestInfo, reservation: BudgetReservation): Promise<boolean> {
    if (scope !== undefined || reservation.venue !== venue || reservation.tokens < weight) return false;
    const frozenMs = await this.options.freezes.frozenForMs(venue);
    if (frozenMs > 0) throw new BudgetExhaustedError(venue, this.options.clock.now() + frozenMs);
    if (this.options.clock.now() >= reservation.untilMs) {
      // Past its window: the rest stays spent there, and this request acquires in its own window.
      reservation.tokens = 0;
      return false;
    }
    reservation.tokens -= weight;
    return true;
  }

  /**
   * Spends a unit's estimated weight from the venue's fixed-window budget in one acquire before its
   * first request (waiting or yielding exactly as a request would), so a unit that fits the window
   * is never refused midway and never repeats requests it already made. Returns the reservation its
   * requests pass to {@link beforeRequest}; with `tokens` 0 when the grant came from the fallback
   * share or no fixed window (nothing to bound its validity by: its weight stays spent).
   */
  async reserve(venue: string, weight: number): Promise<BudgetReservation> {
    const untilMs = await this.spend(venue, weight, undefined);
    return { venue, tokens: untilMs === undefined ? 0 : weight, untilMs: untilMs ?? 0 };
  }

  /** The acquire loop of one spend; resolves the end of the grant's fixed window before its guard (local clock), when known. */
  private async spend(venue: string, weight: number, scope: string | undefined): Promise<number | undefined> {
    const { clock, freezes } = this.options;
    for (;;) {
      // Both marks live in Redis (a FreezeWatch keeps them between announced changes): read together.
      const [frozenMs, fleetFallbackUntil] = await Promise.all([freezes.frozenForMs(venue), this.fleetFallbackMark(venue)]);
      if (frozenMs > 0) throw new BudgetExhaustedError(venue, clock.now() + frozenMs);
      const band = this.guardBand.get(venue);
      const now = clock.now();
      if (band && now >= band.fromMs && now < band.toMs) {
        // Inside the boundary guard (at most 1 s): the request goes out in the next window.
        this.options.metrics.budgetWaits.inc({ venue });
        await sleep(band.toMs - now);
        continue;
      }
      const scopes = this.options.scopes;
      const result =
        scope !== undefined && scopes ? await this.acquireScoped(scopes, venue, scope, weight) : await this.acquire(venue, weight, fleetFallbackUntil);
      if (result.ok) return result.untilMs;
      const waitMs = result.retryAtMs - clock.now();
      if (waitMs > this.maxInlineWaitMs) {
        this.options.metrics.budgetYields.inc({ venue });
        throw new BudgetExhaustedError(venue, result.retryAtMs);
      }
      this.options.metrics.budgetWaits.inc({ venue });
      await sleep(Math.max(1, waitMs));
    }
  }

  /** Records one answer: latency and status metrics, and a venue-reported usage above the shared count. */
  async afterResponse(info: AfterResponseInfo): Promise<void> {
    const { metrics, budgets } = this.options;
    metrics.requestSeconds.observe({ venue: info.venue, endpoint: info.endpoint }, info.latencyMs / 1000);
    metrics.responses.inc({ venue: info.venue, status: statusClass(info.status) });
    if (
      info.usedWeight !== undefined &&
      info.usedWeightWindowStartMs !== undefined &&
      this.venueReportsMore(info.venue, info.usedWeight, info.usedWeightWindowStartMs)
    ) {
      try {
        await budgets.observe(info.venue, info.usedWeight, info.usedWeightWindowStartMs);
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
      }
    }
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

  /** The fleet's latest fallback window mark (0 when this worker has no fallback or is on it). */
  private async fleetFallbackMark(venue: string): Promise<number> {
    const { fallback, freezes } = this.options;
    if (!fallback || fallback.isActive(venue)) return 0;
    return freezes.fleetFallbackUntil ? freezes.fleetFallbackUntil(venue) : fallback.fleetFallbackUntil(venue);
  }

  /**
   * A scope's budget (no fixed window, so no boundary guard): a refusal carries the scope's next
   * free time. While Redis is unreachable the worker budgets on its fallback share of the venue.
   */
  private async acquireScoped(
    scopes: Pick<ScopedBudgets, 'acquire'>,
    venue: string,
    scope: string,
    weight: number,
  ): Promise<{ ok: true; untilMs?: number } | { ok: false; retryAtMs: number }> {
    const { fallback, metrics } = this.options;
    try {
      const r = await scopes.acquire(venue, scope, weight);
      if (fallback?.isActive(venue)) {
        // Redis answers again: the scopes' budgets are shared once more.
        fallback.deactivate(venue);
        metrics.fallbackActive.set({ venue }, 0);
      }
      if (r.ok) {
        metrics.budgetLimit.set({ venue }, r.limit);
        return { ok: true };
      }
      if (r.reason === 'too-heavy') throw await this.tooHeavy(venue, weight, r.limit);
      if (r.reason !== 'exhausted') throw this.statusRefusal(venue, r.reason, r.retryAtMs);
      return { ok: false, retryAtMs: r.retryAtMs };
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || !fallback) throw err;
      metrics.fallbackActive.set({ venue }, 1);
      return await fallback.tryAcquire(venue, weight);
    }
  }

  private async acquire(venue: string, weight: number, fleetFallbackUntil: number): Promise<{ ok: true; untilMs?: number } | { ok: false; retryAtMs: number }> {
    const { fallback, metrics } = this.options;
    try {
      if (fallback?.isActive(venue)) {
        await this.endFallback(venue, fallback);
      } else if (fallback) {
        // Another worker may still be (or just have been) on its fallback share in this window:
        // the store does not know that weight, so the window is marked spent before using it.
        const until = fleetFallbackUntil;
        if (until > this.options.clock.now() && this.markedSpent.get(venue) !== until) {
          await this.markWindowSpent(venue, fallback);
          this.markedSpent.set(venue, until);
        }
      }
      const r = await this.acquires.acquire(venue, weight);
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
          return { ok: true, untilMs: endLocalMs - guardMs };
        }
        return { ok: true };
      }
      if (r.reason === 'too-heavy') throw await this.tooHeavy(venue, weight, r.limit);
      if (r.reason !== 'exhausted') {
        // Paused, disabled or unknown venue: yield the unit for a while instead of polling the
        // store from a held slot.
        throw this.statusRefusal(venue, r.reason, r.retryAtMs);
      }
      return { ok: false, retryAtMs: r.retryAtMs };
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || !fallback) throw err;
      if (!fallback.isActive(venue))
        this.options.logger?.warn({ venue, err: err.message }, "state store unavailable: budgeting locally on this worker's share (limit / live workers)");
      metrics.fallbackActive.set({ venue }, 1);
      return await fallback.tryAcquire(venue, weight);
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
    const { budgets } = this.options;
    const usage = await budgets.usage(venue);
    if (!usage) return;
    const allowance = Math.min(usage.limit, fallback.fleetAllowance(venue));
    if (usage.policy === 'fixed-window' && usage.windowStartMs !== null) {
      await budgets.observe(venue, Math.min(usage.limit, usage.used + allowance), usage.windowStartMs);
    } else if (allowance > 0) {
      await budgets.acquire(venue, allowance);
    }
  }

  /** The unit of a venue its status keeps from sending yields until the status hold ends (`venueHold`). */
  private statusRefusal(venue: string, reason: 'paused' | 'disabled' | 'unknown-venue', retryAtMs: number): BudgetExhaustedError {
    const hold = venueHold(reason === 'unknown-venue' ? null : reason, null, this.options.clock.now());
    return new BudgetExhaustedError(venue, Math.max(retryAtMs, hold?.untilMs ?? retryAtMs));
  }

  /**
   * The request weighs more than the venue's whole window allows: no wait can ever grant it, so
   * the unit fails for good with what to change (the window's length read from the store).
   */
  private async tooHeavy(venue: string, weight: number, limit: number): Promise<RequestTooHeavyError> {
    const periodMs = (await this.options.budgets.usage(venue))?.periodMs ?? null;
    return new RequestTooHeavyError(venue, weight, limit, periodMs);
  }

  /** Exports how far this worker's clock is off the budget's timeline, and warns once per change. */
  private noteClockOffset(venue: string, r: AcquireResult): void {
    const offsetMs = r.clockOffsetMs ?? 0;
    this.options.metrics.budgetClockOffset.set({ venue }, offsetMs / 1000);
    const skewed = Math.abs(offsetMs) > CLOCK_SKEW_TOLERANCE_MS;
    if (skewed === (this.skewed.get(venue) ?? false)) return;
    this.skewed.set(venue, skewed);
    if (skewed) {
      this.options.logger?.warn(
        { venue, offsetMs },
        "this worker's clock is off the venue budget's timeline: retry times are translated onto it; fix the host's time sync",
      );
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
