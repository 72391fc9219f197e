import { MongoNetworkError, MongoNotConnectedError, MongoServerSelectionError, MongoTopologyClosedError, type Document } from 'mongodb';
import { type Clock, StoreUnavailableError, ValidationError } from '@tickfleet/core';
import type { AcquireResult, BudgetUsage, BudgetsRepo } from '@tickfleet/budget';
import { onCallerClock, PAUSED_RETRY_MS, SLIDING_SLOTS, toAcquireResult, toBudgetUsage } from '@tickfleet/budget/acquire-math';
import type { BudgetDoc, MongoCollections } from './documents.js';

/** Server time of the decision, never earlier than this venue's previous decision. */
const NOW_STAGE = { $set: { _now: { $max: [{ $toLong: '$$NOW' }, { $ifNull: ['$at', 0] }] } } };
const IS_GCRA = { $eq: ['$policy', 'gcra'] };
const IS_SLIDING = { $eq: ['$policy', 'sliding-window'] };
const IS_FIXED = { $eq: ['$policy', 'fixed-window'] };
/** A slot's index and weight (`[index, weight]` pairs). */
const SLOT_INDEX = { $arrayElemAt: ['$$this', 0] };
const SLOT_WEIGHT = { $arrayElemAt: ['$$this', 1] };
/** The sum of the weights of the slots `input` evaluates to. */
const slotsWeight = (input: unknown): Document => ({ $sum: { $map: { input, in: SLOT_WEIGHT } } });
/** Sliding window: the slots still overlapping [now - periodMs, now] (`_slot` is the slot of now). */
const LIVE_SLOTS = { $filter: { input: { $ifNull: ['$slots', []] }, cond: { $gte: [SLOT_INDEX, { $subtract: ['$_slot', SLIDING_SLOTS] }] } } };

/**
 * The acquire update pipeline: reset an expired window and spend in the same document update,
 * using only server time (`$$NOW`), so workers with skewed clocks all count in the server's windows.
 * It implements the budget's specification (`decideAcquire` of @tickfleet/budget's acquire-math.ts),
 * as the SQLite statement does; the budget's conformance test runs them side by side.
 */
function acquirePipeline(weight: number): Document[] {
  return [
    NOW_STAGE,
    {
      $set: {
        _ws: { $subtract: ['$_now', { $mod: ['$_now', '$periodMs'] }] },
        _newTat: { $add: [{ $max: [{ $ifNull: ['$tat', 0] }, '$_now'] }, { $multiply: [weight, { $divide: ['$periodMs', '$limit'] }] }] },
        // Sliding window: the slot of now (floor(now * SLIDING_SLOTS / periodMs), as the specification computes it).
        _slot: { $cond: [IS_SLIDING, { $floor: { $divide: [{ $multiply: ['$_now', SLIDING_SLOTS] }, '$periodMs'] } }, null] },
      },
    },
    {
      // $cond evaluates one branch: the other policies never look at slots.
      $set: {
        _cur: { $cond: [IS_SLIDING, slotsWeight(LIVE_SLOTS), { $cond: [{ $eq: ['$windowStart', '$_ws'] }, '$used', 0] }] },
        _live: { $cond: [IS_SLIDING, LIVE_SLOTS, null] },
      },
    },
    {
      $set: {
        ok: {
          $and: [
            { $eq: ['$status', 'active'] },
            {
              $cond: [
                IS_GCRA,
                // 1e-6 absorbs float rounding of weight * T.
                { $lte: [{ $subtract: ['$_newTat', '$_now'] }, { $add: ['$periodMs', 1e-6] }] },
                { $lte: [{ $add: ['$_cur', weight] }, '$limit'] },
              ],
            },
          ],
        },
      },
    },
    {
      $set: {
        windowStart: { $cond: [IS_FIXED, '$_ws', '$windowStart'] },
        used: { $cond: [IS_GCRA, '$used', { $cond: [{ $eq: ['$ok', true] }, { $add: ['$_cur', weight] }, '$_cur'] }] },
        slots: {
          $cond: [
            IS_SLIDING,
            {
              $cond: [
                { $eq: ['$ok', true] },
                // The grant goes to the slot of now, which is the newest if it has weight already.
                {
                  $concatArrays: [
                    { $filter: { input: '$_live', cond: { $ne: [SLOT_INDEX, '$_slot'] } } },
                    [['$_slot', { $add: [slotsWeight({ $filter: { input: '$_live', cond: { $eq: [SLOT_INDEX, '$_slot'] } } }), weight] }]],
                  ],
                },
                '$_live',
              ],
            },
            '$slots',
          ],
        },
        tat: { $cond: [{ $and: [IS_GCRA, { $eq: ['$ok', true] }] }, '$_newTat', '$tat'] },
        at: '$_now',
      },
    },
    { $unset: ['_now', '_ws', '_newTat', '_cur', '_slot', '_live'] },
  ];
}

/** Raises the current window's usage to a venue-reported figure; other windows are left alone. */
function observePipeline(usedWeight: number, windowStartMs: number): Document[] {
  const isCurrent = { $eq: ['$_ws', windowStartMs] };
  return [
    NOW_STAGE,
    { $set: { _ws: { $subtract: ['$_now', { $mod: ['$_now', '$periodMs'] }] } } },
    {
      $set: {
        used: { $cond: [isCurrent, { $cond: [{ $eq: ['$windowStart', windowStartMs] }, { $max: ['$used', usedWeight] }, usedWeight] }, '$used'] },
        windowStart: { $cond: [isCurrent, windowStartMs, '$windowStart'] },
      },
    },
    { $unset: ['_now', '_ws'] },
  ];
}

/**
 * Budgets on MongoDB. Decisions use only the server's clock, so a worker's skewed clock cannot
 * move a window; the caller's clock only serves to translate a refusal's retry time onto it
 * (otherwise a worker an hour behind would yield its units for an hour, one an hour ahead would
 * retry at once in a loop).
 */
export class MongoBudgetsRepo implements BudgetsRepo {
  constructor(
    private readonly c: MongoCollections,
    /** Rebuilds a missing budget document from the venue's connector; false when there is none. */
    private readonly repairBudget: (venue: string) => Promise<boolean>,
    private readonly clock: Clock = { now: () => Date.now(), monotonic: () => performance.now() },
  ) {}

  async acquire(venue: string, weight: number): Promise<AcquireResult> {
    if (!Number.isInteger(weight) || weight <= 0) throw new ValidationError('weight', 'a positive integer', weight);
    const spend = () => unavailableOnNetworkError(() => this.c.budgets.findOneAndUpdate({ _id: venue }, acquirePipeline(weight), { returnDocument: 'after' }));
    let doc = await spend();
    if (!doc && (await this.repairBudget(venue))) doc = await spend();
    if (!doc) {
      const now = this.clock.now();
      return { ok: false, reason: 'unknown-venue', retryAtMs: now + PAUSED_RETRY_MS, limit: 0, atMs: now };
    }
    const result = toAcquireResult({
      policy: doc.policy,
      status: doc.status,
      limit: doc.limit,
      periodMs: doc.periodMs,
      weight,
      ok: doc.ok,
      atMs: doc.at,
      windowStartMs: doc.windowStart ?? null,
      used: doc.used,
      tatMs: doc.tat ?? null,
      ...(doc.policy === 'sliding-window' ? { slots: doc.slots ?? [] } : {}),
    });
    return onCallerClock(result, doc.at - this.clock.now());
  }

  async observe(venue: string, usedWeight: number, windowStartMs: number): Promise<void> {
    if (!Number.isInteger(usedWeight) || usedWeight < 0) throw new ValidationError('usedWeight', 'a non-negative integer', usedWeight);
    await unavailableOnNetworkError(() => this.c.budgets.updateOne({ _id: venue, policy: 'fixed-window' }, observePipeline(usedWeight, windowStartMs)));
  }

  async usage(venue: string): Promise<BudgetUsage | null> {
    const [doc] = await this.c.budgets
      .aggregate<BudgetDoc & { now: number }>([
        { $match: { _id: venue } },
        {
          $project: {
            policy: 1,
            status: 1,
            limit: 1,
            periodMs: 1,
            windowStart: 1,
            used: 1,
            tat: 1,
            slots: 1,
            at: 1,
            now: { $max: [{ $toLong: '$$NOW' }, { $ifNull: ['$at', 0] }] },
          },
        },
      ])
      .toArray();
    if (!doc) return null;
    return toBudgetUsage(
      {
        venue,
        policy: doc.policy,
        limit: doc.limit,
        periodMs: doc.periodMs,
        windowStartMs: doc.windowStart ?? null,
        used: doc.used,
        tatMs: doc.tat ?? null,
        slots: doc.slots ?? [],
      },
      doc.now,
    );
  }
}

/**
 * Socket errors the driver lets through unwrapped: a command written to a pooled connection the
 * server has just closed fails with the socket's own EPIPE/ECONNRESET before the pool notices.
 */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT']);

/**
 * Runs a driver call, turning "the server cannot be reached" (network errors, no server selected,
 * a closed client, a socket the server closed) into StoreUnavailableError, so a worker can fall
 * back to its local budget share.
 */
export async function unavailableOnNetworkError<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const socketCode = (err as NodeJS.ErrnoException | null)?.code;
    if (
      err instanceof MongoNetworkError ||
      err instanceof MongoServerSelectionError ||
      err instanceof MongoNotConnectedError ||
      err instanceof MongoTopologyClosedError ||
      (typeof socketCode === 'string' && SOCKET_ERROR_CODES.has(socketCode))
    ) {
      throw new StoreUnavailableError(`MongoDB store unreachable: ${(err as Error).message}`, { cause: err });
    }
    throw err;
  }
}
