import { type Clock, type Connector, type Pacing, StoreUnavailableError, systemClock, ValidationError } from '@tickfleet/core';
import { QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { PAUSED_RETRY_MS } from './acquire-math.js';
import { BUDGET_DEFAULTS } from './budget-defaults.js';
import type { AcquireResult } from './budget-types.js';
import { CachedConnectors, type ConnectorLookup } from './cached-connectors.js';
import { budgetCommand } from './internal/commands.js';

/** A scope (Xetra market) name: what goes into its Redis key. */
const SCOPE = /^[A-Za-z0-9_-]{1,32}$/;

export interface ScopedBudgetsOptions {
  /** The venues' connectors (`store.connectors`): each scope of a venue gets its connector's limit and pacing. */
  connectors: ConnectorLookup;
  /** Key prefix, the fleet's (`TICKFLEET_PREFIX`). @defaultValue QUEUE_PREFIX */
  prefix?: string;
  clock?: Clock;
  /** How long a connector read from the store is reused (a new limit or pacing applies within this long). @defaultValue BUDGET_DEFAULTS.connectorCacheMs */
  connectorCacheMs?: number;
}

/**
 * Budgets of a venue's scopes: one fleet-wide budget per (venue, scope), each with the venue's whole
 * limit (`limit * headroom` per `periodMs`), for venues whose requests name a part of the API
 * (Xetra: per market, DETR, DFRA, DGAT, DEUR), and every scoped request also spends from the venue's
 * aggregate over all its scopes, with the same limit and pacing: the design's one limiter across all
 * of a venue's downloads (5 per 2 s, 400 ms apart, whichever markets they are for). A scope's budget
 * lives under the venue's hash tag, `<prefix>:venue:{<venue>}:budget:scope:<scope>:…`, the aggregate
 * at `…:budget:scopes:…`, so venues without scopes are untouched and on a Redis Cluster they share
 * the venue's slot.
 *
 * Kept in the fleet's Redis (the one every worker already shares for queues and freezes), one Lua
 * step per decision (`acquireScoped-4.lua`, both budgets or neither), so two workers never both take the last slot. The
 * connector's `pacing` chooses the shape: `even` spaces grants `periodMs / (limit * headroom)` apart
 * (5 per 2 s: 400 ms), `burst` allows `floor(limit * headroom)` back to back in any rolling period.
 * Decisions use the caller's clock, as the SQLite budgets do. Any Redis failure is a
 * StoreUnavailableError: the BudgetGate then waits for Redis (a scope's grants are never leased).
 */
export class ScopedBudgets {
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly connectors: CachedConnectors;
  private readonly acquireCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: ScopedBudgetsOptions,
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.clock = options.clock ?? systemClock;
    this.connectors = new CachedConnectors(options.connectors, this.clock, options.connectorCacheMs ?? BUDGET_DEFAULTS.connectorCacheMs);
    this.acquireCmd = budgetCommand(redis, 'acquireScoped-4.lua');
  }

  /** Spends `weight` from the budget of `scope` of `venue` and from the venue's aggregate, in one atomic step. */
  async acquire(venue: string, scope: string, weight: number): Promise<AcquireResult> {
    if (!Number.isInteger(weight) || weight <= 0) throw new ValidationError('weight', 'a positive integer', weight);
    if (!SCOPE.test(scope)) throw new ValidationError('scope', 'letters, digits, _ or - (at most 32), such as DETR', scope);
    const connector = await this.connectors.get(venue);
    const now = this.clock.now();
    if (!connector) return { ok: false, reason: 'unknown-venue', retryAtMs: now + PAUSED_RETRY_MS, limit: 0, atMs: now };
    const { limit, periodMs, headroom } = connector.rateLimit;
    const perPeriod = limit * headroom;
    const cap = Math.max(1, Math.floor(perPeriod + 1e-9));
    if (connector.status !== 'active') return { ok: false, reason: connector.status, retryAtMs: now + PAUSED_RETRY_MS, limit: cap, atMs: now };
    const pacing = connector.pacing ?? BUDGET_DEFAULTS.pacing;
    // Even pacing spends one weight unit per interval, so any weight fits; a sliding window holds at most `cap`.
    if (pacing === 'burst' && weight > cap) return { ok: false, reason: 'too-heavy', retryAtMs: now, limit: cap, atMs: now };
    const keys = [this.key(venue, scope, pacing), this.key(venue, scope, 'seq'), this.aggregateKey(venue, pacing), this.aggregateKey(venue, 'seq')];
    const [ok, value] = (await this.call(() => this.acquireCmd(keys, [now, weight, Math.max(perPeriod, 1e-6), periodMs, pacing]))) as [number, string];
    if (ok === 1) return { ok: true, used: Number(value), limit: cap, atMs: now };
    return { ok: false, reason: 'exhausted', retryAtMs: Math.ceil(Number(value)), limit: cap, atMs: now };
  }

  /** The interval between two grants of a venue's scopes (any of them) under even pacing: `periodMs / (limit * headroom)`. */
  static spacingMs(connector: Pick<Connector, 'rateLimit'>): number {
    const { limit, periodMs, headroom } = connector.rateLimit;
    return periodMs / (limit * headroom);
  }

  private key(venue: string, scope: string, part: Pacing | 'seq'): string {
    return venueKey(this.prefix, venue, `budget:scope:${scope}:${part}`);
  }

  private aggregateKey(venue: string, part: Pacing | 'seq'): string {
    return venueKey(this.prefix, venue, `budget:scopes:${part}`);
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    if (this.redis.status !== 'ready') throw new StoreUnavailableError(`the fleet Redis is not connected (${this.redis.status}): scoped budgets unavailable`);
    try {
      return await op();
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError(`scoped budget in the fleet Redis failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
}
