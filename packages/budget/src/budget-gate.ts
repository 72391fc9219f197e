import {
  type AfterResponseInfo,
  type BeforeRequestInfo,
  BudgetExhaustedError,
  type Clock,
  RequestTooHeavyError,
  StoreUnavailableError,
  ValidationError,
} from '@tickfleet/core';
import type { Logger } from '@tickfleet/telemetry';
import { CLOCK_SKEW_TOLERANCE_MS } from './acquire-math.js';
import { BUDGET_DEFAULTS, FALLBACK_DEFAULTS, LEASE_DEFAULTS } from './budget-defaults.js';
import type { AcquireResult, BudgetsRepo } from './budget-types.js';
import type { ScopedBudgets } from './scoped-budgets.js';
import type { FallbackBudget } from './store-outage-fallback.js';
import { venueHold } from './venue-control/venue-status.js';
import { LatencyEstimate, windowGuardMs } from './window-guard.js';

/** What the gate needs to know about fleet-wide venue state (`FleetVenueControl` reads the freeze record). */
export interface FreezeSource {
  /** Remaining fleet-wide freeze of the venue in ms (0 when not frozen). */
  frozenForMs(venue: string): Promise<number>;
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
  /**
   * Outage state while the shared budget is unreachable: with it, a request the worker's lease
   * cannot cover waits (or yields) for the budget to answer again; without it, an unreachable
   * budget fails the request.
   */
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
 * Weight of a fixed-window budget the shared budget granted this worker at once: spent locally by
 * the worker's requests until `untilMs` (its window's end on this worker's clock, less the guard),
 * then void (it stays counted in that window: the venue can be under-used, never over-spent).
 */
interface Lease {
  windowStartMs: number;
  tokens: number;
  untilMs: number;
}

type SpendResult = { ok: true; untilMs?: number } | { ok: false; retryAtMs: number };

/**
 * Spends a request's weight from the venue's shared budget before every upstream request.
 * A frozen venue or a spent budget raises BudgetExhaustedError with the time to come back, so
 * the unit yields its slot (moves itself to delayed) instead of sleeping in it; a refusal that
 * clears within `maxInlineWaitMs` is waited out in place. After each response, weight the venue
 * reports (`X-MBX-USED-WEIGHT-1M`) raises the shared count, so traffic from other clients on the
 * same IP is accounted for. A venue has one store acquire in flight per worker, which asks for
 * the weight of every request waiting for it: one store write for all of them.
 *
 * Leases (fixed-window budgets): a store acquire may take more than the request's weight, the
 * worker's lease, whose rest later requests spend without the store until the window's guard. The
 * lease size adapts per venue: doubled when a lease was spent within its window, halved when one
 * ended with weight left, at most `LEASE_DEFAULTS.maxShare` of the limit. While the store is
 * unreachable a worker spends only its lease, then nothing: every weight it sends was counted in
 * the shared window it is sent in, so no partition can make a window hold more than the limit.
 *
 * End-of-window guard: a grant's window end is placed on this worker's clock from the moment its
 * acquire was sent (so the round trip to the budget only shortens it), and nothing is sent later
 * than the guard before it: the venue requests' measured latency plus a margin
 * ({@link windowGuardMs}). No acquire starts within the guard plus the budget's measured round
 * trip of the end: its grant could not be used.
 */
export class BudgetGate {
  private readonly maxInlineWaitMs: number;
  /** Per venue: the window of our latest grant and the shared usage the store reported then. */
  private readonly lastGrant = new Map<string, { windowStartMs: number; used: number; limit: number }>();
  /** Per venue: whether the latest store answer said this worker's clock is off the budget's timeline. */
  private readonly skewed = new Map<string, boolean>();
  /** Per venue: where acquires stop before the current window's end, and that end, on this worker's clock. */
  private readonly guardBand = new Map<string, { fromMs: number; toMs: number }>();
  /** Per fixed-window venue: this worker's lease, and the weight its next lease asks for. */
  private readonly leases = new Map<string, Lease>();
  private readonly leaseSize = new Map<string, number>();
  /** Per fixed-window venue: its window's length, from the latest grant. */
  private readonly periods = new Map<string, number>();
  /** Per venue: the lease acquire in flight (one at a time; the venue's other requests wait for it). */
  private readonly leasing = new Map<string, { weight: number; result: Promise<SpendResult> }>();
  /** Per venue: weight of this worker's requests waiting for the lease acquire in flight. */
  private readonly waiting = new Map<string, number>();
  /** Per venue: measured round trip of the budget's acquires, and latency of the venue's requests. */
  private readonly budgetRtt = new Map<string, LatencyEstimate>();
  private readonly venueLatency = new Map<string, LatencyEstimate>();

  constructor(private readonly options: BudgetGateOptions) {
    this.maxInlineWaitMs = options.maxInlineWaitMs ?? BUDGET_DEFAULTS.maxInlineWaitMs;
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
   * requests pass to {@link beforeRequest}; with `tokens` 0 when the budget has no fixed window
   * (nothing to bound its validity by: its weight stays spent).
   */
  async reserve(venue: string, weight: number): Promise<BudgetReservation> {
    const untilMs = await this.spend(venue, weight, undefined);
    return { venue, tokens: untilMs === undefined ? 0 : weight, untilMs: untilMs ?? 0 };
  }

  /** The acquire loop of one spend; resolves the end of the grant's fixed window before its guard (local clock), when known. */
  private async spend(venue: string, weight: number, scope: string | undefined): Promise<number | undefined> {
    // Checked here: a bad weight must fail its own request, not a lease's ask that sums it with others.
    if (!Number.isInteger(weight) || weight <= 0) throw new ValidationError('weight', 'a positive integer', weight);
    const { clock, freezes } = this.options;
    // While this request waits for another's acquire or a window's start, its weight counts in the next lease's ask.
    let waits = false;
    const wait = (): void => {
      if (!waits) this.waiting.set(venue, (this.waiting.get(venue) ?? 0) + weight);
      waits = true;
    };
    const unwait = (): void => {
      if (waits) this.waiting.set(venue, this.waiting.get(venue)! - weight);
      waits = false;
    };
    try {
      for (;;) {
        const frozenMs = await freezes.frozenForMs(venue);
        if (frozenMs > 0) throw new BudgetExhaustedError(venue, clock.now() + frozenMs);
        const scopes = this.options.scopes;
        let result: SpendResult;
        if (scope !== undefined && scopes) {
          result = await this.acquireScoped(scopes, venue, scope, weight);
        } else {
          const lease = this.leases.get(venue);
          const now = clock.now();
          if (lease && now < lease.untilMs && lease.tokens >= weight) {
            lease.tokens -= weight;
            return lease.untilMs;
          }
          const band = this.guardBand.get(venue);
          if (band && now >= band.fromMs && now < band.toMs) {
            // Inside the guard: a grant now could not be sent in this window; the request goes out in the next.
            this.options.metrics.budgetWaits.inc({ venue });
            wait();
            await sleep(band.toMs - now);
            continue;
          }
          const pending = this.leasing.get(venue);
          if (pending) {
            // Another request of this worker is taking a lease: spend from it if it covers this one;
            // a refusal of no more weight than this one's (or an unreachable budget) is this one's too.
            wait();
            const other = await pending.result.catch(() => undefined);
            if (!other || other.ok || weight < pending.weight) continue;
            result = other;
          } else {
            unwait();
            const leasing = { weight, result: this.acquire(venue, weight).finally(() => this.leasing.delete(venue)) };
            this.leasing.set(venue, leasing);
            result = await leasing.result;
          }
        }
        unwait();
        if (result.ok) return result.untilMs;
        const waitMs = result.retryAtMs - clock.now();
        if (waitMs > this.maxInlineWaitMs) {
          this.options.metrics.budgetYields.inc({ venue });
          throw new BudgetExhaustedError(venue, result.retryAtMs);
        }
        this.options.metrics.budgetWaits.inc({ venue });
        await sleep(Math.max(1, waitMs));
      }
    } finally {
      unwait();
    }
  }

  /**
   * Forgets the venue's lease, so its rest is not sent: the venue's connector no longer sends
   * (paused or disabled). Its weight stays counted in its window.
   */
  dropLease(venue: string): void {
    this.leases.delete(venue);
  }

  /** Records one answer: latency and status metrics, and a venue-reported usage above the shared count. */
  async afterResponse(info: AfterResponseInfo): Promise<void> {
    const { metrics, budgets } = this.options;
    metrics.requestSeconds.observe({ venue: info.venue, endpoint: info.endpoint }, info.latencyMs / 1000);
    // Answered requests only: a connection failure's time says nothing of the trip to the venue.
    if (info.status !== 0) estimate(this.venueLatency, info.venue).observe(info.latencyMs);
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

  /**
   * A scope's budget (no fixed window, so no guard and no lease): a refusal carries the scope's
   * next free time. While Redis is unreachable the scope's requests wait for it.
   */
  private async acquireScoped(scopes: Pick<ScopedBudgets, 'acquire'>, venue: string, scope: string, weight: number): Promise<SpendResult> {
    let r: AcquireResult;
    try {
      r = await scopes.acquire(venue, scope, weight);
    } catch (err) {
      return this.unreachable(venue, err);
    }
    this.reachable(venue);
    if (r.ok) {
      this.options.metrics.budgetLimit.set({ venue }, r.limit);
      return { ok: true };
    }
    if (r.reason === 'too-heavy') throw await this.tooHeavy(venue, weight, r.limit);
    if (r.reason !== 'exhausted') throw this.statusRefusal(venue, r.reason, r.retryAtMs);
    return { ok: false, retryAtMs: r.retryAtMs };
  }

  /**
   * One store acquire for a request the lease does not cover: of the venue's lease size (a fixed
   * window venue's) or, when more, this request's weight and those waiting for it; of the weight
   * alone when the window has less left. A fixed-window grant becomes the worker's lease, with the
   * rest of the previous lease in the same window, less this request's weight. A GCRA or
   * sliding-window budget grants the request's weight alone: no window bounds when a lease of it
   * could still be sent.
   */
  private async acquire(venue: string, weight: number): Promise<SpendResult> {
    const { clock, metrics } = this.options;
    const previous = this.leases.get(venue);
    // The lease's rest, too little for this request (2 left of a lease, a request of weight 3): it
    // joins this grant if that comes in the same window, instead of staying unspent there.
    const carried = previous && clock.now() < previous.untilMs ? previous.tokens : 0;
    // Held out of the lease while the acquire is away, so a lighter request does not spend it too.
    if (previous) previous.tokens -= carried;
    const need = weight - carried;
    // Set once the budget granted in fixed windows: before that (and for GCRA or sliding windows) no lease.
    const size = this.leaseSize.get(venue);
    // The requests that waited for the previous acquire go now too: one acquire for all of them.
    let ask = size === undefined ? need : Math.max(this.speculative(venue, size), need + (this.waiting.get(venue) ?? 0));
    ask = Math.max(need, Math.min(ask, this.roomLeft(venue)));
    let sentAtMs = clock.now();
    let r: AcquireResult;
    try {
      r = await this.options.budgets.acquire(venue, ask);
      if (!r.ok && (r.reason === 'exhausted' || r.reason === 'too-heavy') && ask > need) {
        // Less than a lease left in the window (or the waiting requests together weigh more than a
        // whole window): what this request still needs alone, and smaller leases.
        this.leaseSize.set(venue, Math.max(1, Math.floor((size ?? 1) / 2)));
        ask = need;
        sentAtMs = clock.now();
        r = await this.options.budgets.acquire(venue, ask);
      }
    } catch (err) {
      return this.unreachable(venue, err);
    } finally {
      if (previous) previous.tokens += carried;
    }
    const receivedAtMs = clock.now();
    estimate(this.budgetRtt, venue).observe(receivedAtMs - sentAtMs);
    this.reachable(venue);
    this.noteClockOffset(venue, r);
    if (!r.ok) {
      if (r.reason === 'too-heavy') throw await this.tooHeavy(venue, weight, r.limit);
      // Paused, disabled or unknown venue: yield the unit for a while instead of polling the store from a held slot.
      if (r.reason !== 'exhausted') throw this.statusRefusal(venue, r.reason, r.retryAtMs);
      return { ok: false, retryAtMs: r.retryAtMs };
    }
    if (r.windowStartMs !== undefined) this.lastGrant.set(venue, { windowStartMs: r.windowStartMs, used: r.used, limit: r.limit });
    metrics.budgetUsed.set({ venue }, r.used);
    metrics.budgetLimit.set({ venue }, r.limit);
    if (r.windowStartMs === undefined || r.windowEndMs === undefined) return { ok: true };
    // The store decided after the acquire was sent: on this worker's clock its window ends no earlier than this.
    const endLocalMs = sentAtMs + (r.windowEndMs - r.atMs);
    const untilMs = endLocalMs - windowGuardMs(r.windowEndMs - r.windowStartMs, estimate(this.venueLatency, venue).upperMs());
    this.guardBand.set(venue, { fromMs: untilMs - estimate(this.budgetRtt, venue).upperMs(), toMs: endLocalMs });
    this.periods.set(venue, r.windowEndMs - r.windowStartMs);
    this.adaptLeaseSize(venue, previous, r.windowStartMs, r.limit);
    // Granted too late to be sent in its window: left spent there (under-using the venue, never over-spending it).
    if (receivedAtMs >= untilMs) return { ok: false, retryAtMs: endLocalMs };
    // The rest held out above joins a grant in its own window, if its lease was not dropped meanwhile.
    const joined = previous && previous === this.leases.get(venue) && previous.windowStartMs === r.windowStartMs ? carried : 0;
    if (joined > 0) previous!.tokens -= joined;
    const tokens = ask + joined;
    // Granted in a new window, where the rest it was to join is not: the request asks again at once.
    if (tokens < weight) {
      this.leases.set(venue, { windowStartMs: r.windowStartMs, tokens, untilMs });
      return { ok: false, retryAtMs: receivedAtMs };
    }
    this.leases.set(venue, { windowStartMs: r.windowStartMs, tokens: tokens - weight, untilMs });
    return { ok: true, untilMs };
  }

  /**
   * At most what the window still holds as far as this worker saw at its latest grant (the whole
   * limit in a window it has no grant in): an ask past it would be refused, and asked again alone.
   */
  private roomLeft(venue: string): number {
    const last = this.lastGrant.get(venue);
    if (!last) return Number.POSITIVE_INFINITY;
    const band = this.guardBand.get(venue);
    const sameWindow = band !== undefined && this.options.clock.now() < band.toMs;
    return sameWindow ? last.limit - last.used : last.limit;
  }

  /**
   * The part of a lease no request waits for yet, shrunk in the second half of a window in
   * proportion to the time left to send it: what is not sent by the guard is lost to the window.
   */
  private speculative(venue: string, size: number): number {
    const band = this.guardBand.get(venue);
    const periodMs = this.periods.get(venue);
    const now = this.options.clock.now();
    if (!band || periodMs === undefined || now >= band.toMs) return size;
    return Math.ceil(size * Math.min(1, Math.max(0, band.fromMs - now) / (periodMs / 2)));
  }

  /**
   * The next lease's size: doubled when the previous lease was spent within the window it was
   * granted in (demand above it), halved when it ended with weight left (that weight was lost),
   * within [1, `LEASE_DEFAULTS.maxShare` of the limit].
   */
  private adaptLeaseSize(venue: string, previous: Lease | undefined, windowStartMs: number, limit: number): void {
    let size = this.leaseSize.get(venue) ?? 1;
    if (previous?.windowStartMs === windowStartMs) size *= 2;
    else if (previous && previous.tokens > 0) size = Math.ceil(size / 2);
    this.leaseSize.set(venue, Math.min(Math.max(1, Math.floor(limit * LEASE_DEFAULTS.maxShare)), Math.max(1, size)));
  }

  /**
   * The shared budget could not be reached: without a fallback the request fails; with one it
   * waits for the budget to answer again. Nothing is granted without the budget's word: a request
   * the lease covers never gets here.
   */
  private unreachable(venue: string, err: unknown): SpendResult {
    const { fallback, metrics, clock } = this.options;
    if (!(err instanceof StoreUnavailableError) || !fallback) throw err;
    if (!fallback.isActive(venue)) {
      fallback.activate(venue);
      this.options.logger?.warn({ venue, err: err.message }, "state store unavailable: budgeting locally on this worker's lease only, nothing past it");
    }
    metrics.fallbackActive.set({ venue }, 1);
    return { ok: false, retryAtMs: clock.now() + FALLBACK_DEFAULTS.outageRetryMs };
  }

  /** The shared budget answered: ends an outage, if any. */
  private reachable(venue: string): void {
    const { fallback, metrics, clock } = this.options;
    metrics.fallbackActive.set({ venue }, 0);
    if (!fallback?.isActive(venue)) return;
    fallback.deactivate(venue);
    this.options.logger?.info({ venue, resumedAt: new Date(clock.now()).toISOString() }, 'state store reachable again: shared budget resumed');
  }

  /** The unit of a venue its status keeps from sending yields until the status hold ends (`venueHold`). */
  private statusRefusal(venue: string, reason: 'paused' | 'disabled' | 'unknown-venue', retryAtMs: number): BudgetExhaustedError {
    this.dropLease(venue);
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

function estimate(map: Map<string, LatencyEstimate>, venue: string): LatencyEstimate {
  let e = map.get(venue);
  if (!e) {
    e = new LatencyEstimate();
    map.set(venue, e);
  }
  return e;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
