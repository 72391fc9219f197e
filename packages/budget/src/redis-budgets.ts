import { type Clock, effectiveLimit, StoreUnavailableError, systemClock, ValidationError } from '@tickfleet/core';
import { CachedConnectors, type ConnectorLookup } from './cached-connectors.js';
import { connectRedis, maskRedisUrl, QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { CLOCK_SKEW_TOLERANCE_MS, onCallerClock, PAUSED_RETRY_MS, SLIDING_SLOTS, toAcquireResult, toBudgetUsage, type SlidingSlot } from './acquire-math.js';
import { BUDGET_DEFAULTS } from './budget-defaults.js';
import type { AcquireResult, BudgetUsage, BudgetsRepo } from './budget-types.js';
import { budgetCommand, budgetCommandSource } from './internal/commands.js';

/** The library's increment script, changed to store only a weight that fits (see the file). */
const CONSUME_WINDOW_SCRIPT = budgetCommandSource('consumeWindow-1.lua');

export interface RedisBudgetsOptions {
  /** The venues' connectors; `store.connectors` of the fleet's state store. */
  connectors: ConnectorLookup;
  /** Key prefix, the fleet's (`TICKFLEET_PREFIX`). @defaultValue QUEUE_PREFIX */
  prefix?: string;
  clock?: Clock;
  /**
   * How long a connector read from the store is reused. A pause, a resume or a new limit takes
   * effect within this long; while the store is unreachable the last read connector is used, so
   * the Redis budget keeps coordinating the fleet through a store outage. @defaultValue BUDGET_DEFAULTS.connectorCacheMs
   */
  connectorCacheMs?: number;
  /** How often the Redis server's clock is read again to check this process's clock against it. @defaultValue BUDGET_DEFAULTS.timeSyncMs */
  timeSyncMs?: number;
  /**
   * The Redis server's clock as this process reads it. A real server's clock cannot be set, so a
   * test that must have the budget decide at known times (the conformance cases' clock skew) gives
   * one here; the scripts and keys are the real ones either way. @defaultValue the server's `TIME`
   */
  serverClock?: Pick<Clock, 'now'>;
  /** The budget Redis's URL with any password masked, for error messages. @defaultValue 'budget Redis' */
  label?: string;
}

/**
 * Budgets in Redis (`TICKFLEET_BUDGET_URL`), the same {@link BudgetsRepo} as the state store's.
 *
 * Fixed-window budgets go through rate-limiter-flexible's `RateLimiterRedis`: a weighted
 * `consume(key, weight)` charges the window, through the library's increment script changed to
 * store nothing for a weight that does not fit (`consumeWindow-1.lua`, the library's
 * `customIncrTtlLuaScript`), so a window never reads above what was granted. The library's windows start at a
 * key's first use (a key lives `duration` seconds from the first consume), so keyed by venue alone
 * its windows would drift off the venue's clock windows: four processes that each stayed within
 * the limit by the library's count let a venue see up to ~1.9× its per-second limit in one clock
 * second. So every clock window has its own key, `…:budget:fw:<floor(now / periodMs)>`, whose TTL
 * only has to outlast the rest of that window: the count of one clock window is exactly the
 * library's count of one key.
 *
 * GCRA and sliding windows have no counterpart in the library: each is one Lua script
 * (`acquireGcra-1.lua`, `acquireSliding-1.lua`, a hash of the window's slots) with the store budgets'
 * arithmetic. Header corrections raise a window's count with `observeWindow-1.lua`
 * (an atomic max on the library's key).
 *
 * Timeline: decisions are made on this process's clock, as the SQLite budgets' are, unless it is
 * more than CLOCK_SKEW_TOLERANCE_MS off the Redis server's (read with TIME every `timeSyncMs`):
 * then on its clock plus that offset, so a worker whose clock is broken still charges the windows
 * the others charge, and its retry times are translated back onto its clock. Smaller differences
 * are ignored on purpose: a TIME reading is only good to half its round trip, and a window that
 * began a few ms early by an estimate would send requests the venue counts in the window before
 * (the gate guards a window's end, not its start). Keys carry the venue's hash tag
 * (`<prefix>:venue:{<venue>}:budget:…`), so on a Redis Cluster they share the slot of the venue's
 * queue. Any Redis failure is a StoreUnavailableError, which the BudgetGate answers as a store
 * outage: the worker spends only its lease, then waits for the budget.
 */
export class RedisBudgetsRepo implements BudgetsRepo {
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly connectors: CachedConnectors;
  private readonly timeSyncMs: number;
  private readonly label: string;
  private readonly gcraCmd: LuaCommand;
  private readonly observeCmd: LuaCommand;
  private readonly slidingCmd: LuaCommand;
  /** One limiter per effective limit: the library's `points` is per limiter. */
  private readonly limiters = new Map<number, RateLimiterRedis>();
  /** Redis server time minus this process's clock when beyond CLOCK_SKEW_TOLERANCE_MS, else 0. */
  private offsetMs = 0;
  private syncedAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisBudgetsOptions,
  ) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.clock = options.clock ?? systemClock;
    this.connectors = new CachedConnectors(options.connectors, this.clock, options.connectorCacheMs ?? BUDGET_DEFAULTS.connectorCacheMs);
    this.timeSyncMs = options.timeSyncMs ?? BUDGET_DEFAULTS.timeSyncMs;
    this.label = options.label ?? 'budget Redis';
    this.gcraCmd = budgetCommand(redis, 'acquireGcra-1.lua');
    this.observeCmd = budgetCommand(redis, 'observeWindow-1.lua');
    this.slidingCmd = budgetCommand(redis, 'acquireSliding-1.lua');
  }

  /** This process's correction onto the Redis server's clock (0 while they agree within the tolerance). */
  get clockOffsetMs(): number {
    return this.offsetMs;
  }

  async acquire(venue: string, weight: number): Promise<AcquireResult> {
    if (!Number.isInteger(weight) || weight <= 0) throw new ValidationError('weight', 'a positive integer', weight);
    const connector = await this.connectors.get(venue);
    await this.syncClock();
    const now = this.now();
    if (!connector) return { ok: false, reason: 'unknown-venue', retryAtMs: this.clock.now() + PAUSED_RETRY_MS, limit: 0, atMs: now };
    const { policy, periodMs } = connector.rateLimit;
    const limit = effectiveLimit(connector.rateLimit);
    const base = { policy, status: connector.status, limit, periodMs, weight, atMs: now, windowStartMs: null, used: 0, tatMs: null };
    // Refusals that need no Redis: paused or disabled, or heavier than the whole window.
    if (connector.status !== 'active' || weight > limit) return onCallerClock(toAcquireResult({ ...base, ok: false }), this.offsetMs);
    if (policy === 'gcra') {
      const [ok, tat] = (await this.call(() => this.gcraCmd([this.key(venue, 'budget:gcra')], [now, weight, limit, periodMs]))) as [number, string];
      return onCallerClock(toAcquireResult({ ...base, ok: ok === 1, tatMs: tat === '' ? null : Number(tat) }), this.offsetMs);
    }
    if (policy === 'sliding-window') {
      const [ok, flat] = (await this.call(() => this.slidingCmd([this.key(venue, 'budget:sw')], [now, weight, limit, periodMs, SLIDING_SLOTS]))) as [
        number,
        number[],
      ];
      const slots = pairs(flat);
      const used = slots.reduce((sum, [, w]) => sum + w, 0);
      return onCallerClock(toAcquireResult({ ...base, ok: ok === 1, used, slots }), this.offsetMs);
    }
    const index = Math.floor(now / periodMs);
    const key = this.windowKey(venue, index);
    const limiter = this.limiter(limit);
    let ok: boolean;
    let used: number;
    try {
      used = (await limiter.consume(key, weight, { customDuration: windowTtlSeconds(now, index, periodMs) })).consumedPoints;
      ok = true;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw this.unavailable(err);
      // Refused: consumeWindow-1.lua stored nothing (it reports the sum it would have stored).
      ok = false;
      used = err.consumedPoints - weight;
    }
    // The decision's time is taken after Redis answered: a grant that crossed into the next window
    // on its way back reads as made at the very end of its window, and the BudgetGate's boundary
    // guard then holds the request for the next window instead of sending it uncounted.
    return onCallerClock(toAcquireResult({ ...base, ok, atMs: Math.max(now, this.now()), windowStartMs: index * periodMs, used }), this.offsetMs);
  }

  async observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void> {
    if (!Number.isInteger(usedWeight) || usedWeight < 0) throw new ValidationError('usedWeight', 'a non-negative integer', usedWeight);
    const connector = await this.connectors.get(venue);
    if (!connector || connector.rateLimit.policy !== 'fixed-window') return;
    await this.syncClock();
    const now = this.now();
    const { periodMs } = connector.rateLimit;
    const index = Math.floor(now / periodMs);
    // A report about a window that is not current changes nothing, as in the store budgets.
    if (index * periodMs !== windowStartMs) return;
    await this.call(() => this.observeCmd([this.windowKey(venue, index)], [usedWeight, windowTtlSeconds(now, index, periodMs) * 1000]));
  }

  async usage(venue: string): Promise<BudgetUsage | null> {
    const connector = await this.connectors.get(venue);
    if (!connector) return null;
    await this.syncClock();
    const now = this.now();
    const { policy, periodMs } = connector.rateLimit;
    const limit = effectiveLimit(connector.rateLimit);
    if (policy === 'gcra') {
      const tat = await this.call(() => this.redis.get(this.key(venue, 'budget:gcra')));
      return toBudgetUsage({ venue, policy, limit, periodMs, windowStartMs: null, used: 0, tatMs: tat === null ? null : Number(tat) }, now);
    }
    if (policy === 'sliding-window') {
      const hash = await this.call(() => this.redis.hgetall(this.key(venue, 'budget:sw')));
      const slots = Object.entries(hash).map(([i, w]) => [Number(i), Number(w)] as const);
      return toBudgetUsage({ venue, policy, limit, periodMs, windowStartMs: null, used: 0, tatMs: null, slots }, now);
    }
    const index = Math.floor(now / periodMs);
    const res = await this.call(() => this.limiter(limit).get(this.windowKey(venue, index)));
    return toBudgetUsage({ venue, policy, limit, periodMs, windowStartMs: index * periodMs, used: res?.consumedPoints ?? 0, tatMs: null }, now);
  }

  private now(): number {
    return this.clock.now() + this.offsetMs;
  }

  /**
   * Re-reads the Redis server's clock when the last reading is older than `timeSyncMs`, and sets
   * the offset to the difference when it exceeds CLOCK_SKEW_TOLERANCE_MS, else to 0. The server
   * read its clock somewhere within a TIME round trip, so of three readings the one with the
   * shortest trip counts; when even that trip took longer than the tolerance (a stalled process),
   * the previous offset stays and the clock is read again a second later.
   */
  private async syncClock(): Promise<void> {
    if (this.clock.now() - this.syncedAtMs < this.timeSyncMs) return;
    let best: { rttMs: number; offsetMs: number; atMs: number } | undefined;
    for (let i = 0; i < 3; i++) {
      const before = this.clock.now();
      const serverMs = await this.serverNow();
      const after = this.clock.now();
      const sample = { rttMs: after - before, offsetMs: Math.round(serverMs - (before + after) / 2), atMs: after };
      if (!best || sample.rttMs < best.rttMs) best = sample;
    }
    if (!best) return;
    if (best.rttMs > CLOCK_SKEW_TOLERANCE_MS) {
      this.syncedAtMs = best.atMs - this.timeSyncMs + 1000;
      return;
    }
    this.offsetMs = Math.abs(best.offsetMs) > CLOCK_SKEW_TOLERANCE_MS ? best.offsetMs : 0;
    this.syncedAtMs = best.atMs;
  }

  private async serverNow(): Promise<number> {
    const serverClock = this.options.serverClock;
    if (serverClock) return serverClock.now();
    const [seconds, micros] = await this.call(() => this.redis.time());
    return Number(seconds) * 1000 + Number(micros) / 1000;
  }

  private limiter(points: number): RateLimiterRedis {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      // No insurance limiter: a Redis failure must surface as StoreUnavailableError so the gate
      // spends only its lease (see BudgetGate); the library's in-memory insurance would give every
      // worker the whole limit. Not-ready rejects at once instead of
      // queueing the command until Redis is back.
      limiter = new RateLimiterRedis({
        storeClient: this.redis,
        points,
        duration: 1,
        keyPrefix: '',
        rejectIfRedisNotReady: true,
        customIncrTtlLuaScript: CONSUME_WINDOW_SCRIPT,
      });
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  private key(venue: string, suffix: string): string {
    return venueKey(this.prefix, venue, suffix);
  }

  private windowKey(venue: string, index: number): string {
    return this.key(venue, `budget:fw:${index}`);
  }

  /** Runs one Redis operation; a failure (or a connection not ready) becomes StoreUnavailableError. */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    if (this.redis.status !== 'ready') throw new StoreUnavailableError(`${this.label} is not connected (${this.redis.status})`);
    try {
      return await op();
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  private unavailable(err: unknown): StoreUnavailableError {
    if (err instanceof StoreUnavailableError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new StoreUnavailableError(`${this.label} failed: ${message}`, { cause: err });
  }
}

/** The sliding-window script's `index, weight, …` reply as slots, oldest first (a Redis hash keeps no order). */
function pairs(flat: number[]): SlidingSlot[] {
  const slots: SlidingSlot[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) slots.push([Number(flat[i]), Number(flat[i + 1])]);
  return slots.sort((a, b) => a[0] - b[0]);
}

/**
 * Seconds a window's key must live from `now`: the rest of the window, rounded up to the whole
 * seconds the library's TTLs take, plus one. The key names one clock window, so outliving it is
 * harmless, while expiring early would reset the window's count before the venue's does.
 */
function windowTtlSeconds(now: number, index: number, periodMs: number): number {
  return Math.ceil(((index + 1) * periodMs - now) / 1000) + 1;
}

export interface OpenRedisBudgetsOptions extends Omit<RedisBudgetsOptions, 'label'> {
  /** How long to wait for the first connection. @defaultValue connectRedis's `waitMs` */
  waitMs?: number;
}

/** A {@link RedisBudgetsRepo} on its own connection to `url`; `close` ends that connection. */
export type RedisBudgets = RedisBudgetsRepo & { close(): Promise<void> };

/**
 * Connects to the budget Redis at `url` (`redis://`, `rediss://` or `redis+cluster://`) on a
 * connection of its own that fails commands fast instead of queueing them while Redis is away (the
 * fleet connection retries forever, as BullMQ needs), so an outage reaches the gate's fallback at
 * once. The URL's password never appears in messages: they name the URL masked.
 */
export async function openRedisBudgets(url: string, options: OpenRedisBudgetsOptions): Promise<RedisBudgets> {
  const label = `budget Redis at ${maskRedisUrl(url)}`;
  const redis = await connectRedis(url, {
    blocking: false,
    connectionName: `tickfleet-budget-${process.pid}`,
    ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
    redis: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5000 },
  }).catch((err: unknown) => {
    // A malformed Cluster URL is reported with the URL as given: name this variable, masked.
    if (err instanceof ValidationError) throw new ValidationError('TICKFLEET_BUDGET_URL', err.expected, maskRedisUrl(url));
    throw err;
  });
  // Without a listener ioredis prints every reconnect failure; the gate reports the outage instead.
  redis.on('error', () => undefined);
  const repo = new RedisBudgetsRepo(redis, { ...options, label }) as RedisBudgets;
  repo.close = async () => {
    await redis.quit().catch(() => redis.disconnect());
  };
  return repo;
}
