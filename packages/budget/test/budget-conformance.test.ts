import { randomUUID } from 'node:crypto';
import { type Clock, type ConnectorStatus, effectiveLimit, type RateLimit } from '@tickfleet/core';
import { startMongoWire, type MongoWireHandle } from '@tickfleet/mongo-wire';
import { openStore, type StateStore } from '@tickfleet/store';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { decideAcquire, decideObserve, EMPTY_BUDGET_ROW, onCallerClock, toAcquireResult } from '../src/acquire-math.js';
import type { AcquireResult } from '../src/budget-types.js';
import { openRedisBudgets, type RedisBudgets } from '../src/redis-budgets.js';
import { connector, venueName } from './budget-contract.js';

/*
 * The budget's arithmetic, one table of cases run through every implementation of it: the
 * specification (`decideAcquire` / `decideObserve` in acquire-math.ts), the SQLite statement (a real
 * temp file), the MongoDB update pipeline (the in-repo wire server) and the Redis scripts (a real
 * redis-server). Every backend must return exactly the specification's results, and the
 * specification the table's. (A worker's lease is a grant of these backends, spent in-process:
 * there is no arithmetic of its own to run here.)
 *
 * Each step names the store's time. The stores decide on their own clocks, which a test cannot
 * set on a real server, so: SQLite decides on the caller's clock (set per step), the wire server
 * gets a clock option (a real mongod's cannot be set, hence the wire server even with MONGO_URL),
 * and the Redis budgets read the server's clock through `serverClock` (the scripts and keys are
 * the real ones). Store times never go back within a case: Redis charges the window of the time a
 * caller read, while SQLite and MongoDB never decide before their latest decision, and that
 * difference is by design (see `decideAcquire`).
 */

/** Epoch ms every case counts from: a multiple of every case's period, so its first window starts at 0. */
const T0 = Date.UTC(2030, 0, 1);
/** How far a skewed caller's clock runs behind the store's: an hour, far beyond CLOCK_SKEW_TOLERANCE_MS. */
const BEHIND_MS = 3_600_000;

type Expected =
  | { ok: true; used: number; windowStartMs?: number; clockOffsetMs?: number }
  | { ok: false; reason: 'exhausted' | 'paused' | 'disabled' | 'too-heavy'; retryAtMs: number; clockOffsetMs?: number };

/**
 * One step of a case, times in ms after T0. `at` is the store's time; a step `behind` is sent by a
 * caller whose clock is BEHIND_MS behind it (its expected retry times are on its own clock). A
 * skewed caller's first step is at the time of the step before it: SQLite has no clock of its own
 * and learns the timeline from its latest decision.
 */
type Step =
  { at: number; acquire: number; behind?: true; expect: Expected } | { at: number; observe: number; windowStartMs: number } | { status: ConnectorStatus };

interface Case {
  name: string;
  rateLimit: RateLimit;
  steps: Step[];
}

const fixed = (limit: number, periodMs: number, headroom = 1): RateLimit => ({ policy: 'fixed-window', limit, periodMs, headroom });
const gcra = (limit: number, periodMs: number, headroom = 1): RateLimit => ({ policy: 'gcra', limit, periodMs, headroom });
const sliding = (limit: number, periodMs: number, headroom = 1): RateLimit => ({ policy: 'sliding-window', limit, periodMs, headroom });

const CASES: Case[] = [
  {
    name: 'fixed window: grants up to the limit, then refuses until the window ends',
    rateLimit: fixed(5, 1000),
    steps: [
      { at: 0, acquire: 2, expect: { ok: true, used: 2, windowStartMs: 0 } },
      { at: 100, acquire: 2, expect: { ok: true, used: 4, windowStartMs: 0 } },
      { at: 200, acquire: 1, expect: { ok: true, used: 5 } },
      { at: 300, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
      { at: 999, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
      { at: 1000, acquire: 5, expect: { ok: true, used: 5, windowStartMs: 1000 } },
    ],
  },
  {
    name: 'window edges: the last ms of a window, the first of the next, windows nothing was spent in',
    rateLimit: fixed(3, 1000),
    steps: [
      { at: 998, acquire: 3, expect: { ok: true, used: 3, windowStartMs: 0 } },
      { at: 999, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
      { at: 1000, acquire: 1, expect: { ok: true, used: 1, windowStartMs: 1000 } },
      { at: 1999, acquire: 3, expect: { ok: false, reason: 'exhausted', retryAtMs: 2000 } },
      { at: 1999, acquire: 2, expect: { ok: true, used: 3, windowStartMs: 1000 } },
      { at: 5500, acquire: 3, expect: { ok: true, used: 3, windowStartMs: 5000 } },
    ],
  },
  {
    name: 'headroom: the effective limit is floor(limit * headroom), at least 1',
    rateLimit: fixed(10, 60_000, 0.95),
    steps: [
      { at: 0, acquire: 9, expect: { ok: true, used: 9 } },
      { at: 1, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 60_000 } },
    ],
  },
  {
    // 100 * 0.29 is 28.999999999999996 in binary floating point: every backend floors it to 28.
    name: 'headroom: a product just under an integer floors below it everywhere',
    rateLimit: fixed(100, 60_000, 0.29),
    steps: [
      { at: 0, acquire: 28, expect: { ok: true, used: 28 } },
      { at: 1, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 60_000 } },
    ],
  },
  {
    name: 'weight larger than the window (fixed): too-heavy, retry a period after the decision, nothing spent',
    rateLimit: fixed(5, 1000),
    steps: [
      { at: 250, acquire: 6, expect: { ok: false, reason: 'too-heavy', retryAtMs: 1250 } },
      { at: 300, acquire: 5, expect: { ok: true, used: 5, windowStartMs: 0 } },
    ],
  },
  {
    name: 'weight larger than the window (gcra): too-heavy, retry a period after the decision, nothing spent',
    rateLimit: gcra(4, 800),
    steps: [
      { at: 100, acquire: 5, expect: { ok: false, reason: 'too-heavy', retryAtMs: 900 } },
      { at: 100, acquire: 4, expect: { ok: true, used: 4 } },
    ],
  },
  {
    // T = 800 / 4 = 200 ms per unit of weight.
    name: 'gcra: bursts up to the limit, then spaces grants by periodMs / limit',
    rateLimit: gcra(4, 800),
    steps: [
      { at: 0, acquire: 1, expect: { ok: true, used: 1 } },
      { at: 0, acquire: 1, expect: { ok: true, used: 2 } },
      { at: 0, acquire: 2, expect: { ok: true, used: 4 } },
      { at: 0, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 200 } },
      { at: 199, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 200 } },
      { at: 200, acquire: 1, expect: { ok: true, used: 4 } },
      { at: 250, acquire: 2, expect: { ok: false, reason: 'exhausted', retryAtMs: 600 } },
      { at: 600, acquire: 2, expect: { ok: true, used: 4 } },
      { at: 5000, acquire: 1, expect: { ok: true, used: 1 } },
    ],
  },
  {
    // T = 1000 / 3 ms: grants land on fractions of a ms; retry times round up to the next whole ms.
    name: 'gcra: a fractional emission interval',
    rateLimit: gcra(3, 1000),
    steps: [
      { at: 0, acquire: 3, expect: { ok: true, used: 3 } },
      { at: 0, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 334 } },
      { at: 333, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 334 } },
      { at: 334, acquire: 1, expect: { ok: true, used: 3 } },
      { at: 334, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 667 } },
      { at: 1000, acquire: 2, expect: { ok: true, used: 3 } },
      { at: 1001, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1334 } },
    ],
  },
  {
    name: 'a paused or disabled connector refuses without spending; resumed, the window is as it was',
    rateLimit: fixed(5, 1000),
    steps: [
      { at: 0, acquire: 2, expect: { ok: true, used: 2 } },
      { status: 'paused' },
      { at: 100, acquire: 1, expect: { ok: false, reason: 'paused', retryAtMs: 1100 } },
      { status: 'disabled' },
      { at: 200, acquire: 1, expect: { ok: false, reason: 'disabled', retryAtMs: 1200 } },
      { status: 'active' },
      { at: 300, acquire: 3, expect: { ok: true, used: 5 } },
      { at: 400, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
    ],
  },
  {
    name: 'a paused gcra connector refuses without spending',
    rateLimit: gcra(2, 1000),
    steps: [
      { at: 0, acquire: 1, expect: { ok: true, used: 1 } },
      { status: 'paused' },
      { at: 0, acquire: 1, expect: { ok: false, reason: 'paused', retryAtMs: 1000 } },
      { status: 'active' },
      { at: 0, acquire: 1, expect: { ok: true, used: 2 } },
      { at: 0, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 500 } },
    ],
  },
  {
    name: 'skew (fixed): a caller an hour behind spends in the store windows and gets retry times on its own clock',
    rateLimit: fixed(3, 1000),
    steps: [
      { at: 500, acquire: 1, expect: { ok: true, used: 1, windowStartMs: 0 } },
      { at: 500, acquire: 1, behind: true, expect: { ok: true, used: 2, windowStartMs: 0, clockOffsetMs: BEHIND_MS } },
      { at: 600, acquire: 2, behind: true, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 - BEHIND_MS, clockOffsetMs: BEHIND_MS } },
      { at: 700, acquire: 1, expect: { ok: true, used: 3 } },
      { at: 800, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
      { at: 1000, acquire: 3, behind: true, expect: { ok: true, used: 3, windowStartMs: 1000, clockOffsetMs: BEHIND_MS } },
    ],
  },
  {
    name: 'skew (gcra): a caller an hour behind shares the bucket and gets retry times on its own clock',
    rateLimit: gcra(2, 1000),
    steps: [
      { at: 0, acquire: 1, expect: { ok: true, used: 1 } },
      { at: 0, acquire: 1, behind: true, expect: { ok: true, used: 2, clockOffsetMs: BEHIND_MS } },
      { at: 100, acquire: 1, behind: true, expect: { ok: false, reason: 'exhausted', retryAtMs: 500 - BEHIND_MS, clockOffsetMs: BEHIND_MS } },
      { at: 500, acquire: 1, behind: true, expect: { ok: true, used: 2, clockOffsetMs: BEHIND_MS } },
    ],
  },
  {
    // Slots of 1000 / 20 = 50 ms. A fixed window would grant again at 1000; the sliding one only
    // once the slot spent at 0 has left every window reaching back from now (slot 21, at 1050).
    name: 'sliding window: at most the limit in any period, wherever it starts',
    rateLimit: sliding(5, 1000),
    steps: [
      { at: 0, acquire: 2, expect: { ok: true, used: 2 } },
      { at: 400, acquire: 3, expect: { ok: true, used: 5 } },
      { at: 900, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1050 } },
      { at: 1000, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1050 } },
      { at: 1050, acquire: 2, expect: { ok: true, used: 5 } },
      { at: 1400, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1450 } },
      { at: 1450, acquire: 3, expect: { ok: true, used: 5 } },
      { at: 5000, acquire: 5, expect: { ok: true, used: 5 } },
    ],
  },
  {
    // Slots of 2430 / 20 = 121.5 ms: slot 0 leaves at 21 * 121.5 = 2551.5, a retry at the next whole ms.
    name: 'sliding window: a fractional slot length',
    rateLimit: sliding(3, 2430),
    steps: [
      { at: 0, acquire: 3, expect: { ok: true, used: 3 } },
      { at: 2551, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 2552 } },
      { at: 2552, acquire: 1, expect: { ok: true, used: 1 } },
    ],
  },
  {
    name: 'sliding window: headroom, too-heavy with nothing spent, and venue reports ignored',
    rateLimit: sliding(10, 1000, 0.95),
    steps: [
      { at: 100, acquire: 10, expect: { ok: false, reason: 'too-heavy', retryAtMs: 1100 } },
      { at: 100, observe: 9, windowStartMs: 0 },
      { at: 100, acquire: 9, expect: { ok: true, used: 9 } },
      { at: 200, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1150 } },
    ],
  },
  {
    name: 'skew (sliding): a caller an hour behind shares the window and gets retry times on its own clock',
    rateLimit: sliding(2, 1000),
    steps: [
      { at: 0, acquire: 1, expect: { ok: true, used: 1 } },
      { at: 0, acquire: 1, behind: true, expect: { ok: true, used: 2, clockOffsetMs: BEHIND_MS } },
      { at: 100, acquire: 1, behind: true, expect: { ok: false, reason: 'exhausted', retryAtMs: 1050 - BEHIND_MS, clockOffsetMs: BEHIND_MS } },
      { at: 1050, acquire: 2, expect: { ok: true, used: 2 } },
    ],
  },
  {
    name: 'observe raises the current window to what the venue reported, never lowers it, ignores other windows',
    rateLimit: fixed(10, 1000),
    steps: [
      { at: 100, acquire: 1, expect: { ok: true, used: 1 } },
      { at: 150, observe: 8, windowStartMs: 0 },
      { at: 160, observe: 3, windowStartMs: 0 },
      { at: 170, observe: 10, windowStartMs: -1000 },
      { at: 200, acquire: 2, expect: { ok: true, used: 10 } },
      { at: 300, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 1000 } },
      { at: 1100, observe: 7, windowStartMs: 1000 },
      { at: 1200, acquire: 3, expect: { ok: true, used: 10, windowStartMs: 1000 } },
      { at: 1300, acquire: 1, expect: { ok: false, reason: 'exhausted', retryAtMs: 2000 } },
    ],
  },
];

/** The time the current step runs at (absolute): every caller's clock and every store's derive from it. */
let storeNow = T0;
const callerClock = (behindMs: number): Clock => ({ now: () => storeNow - behindMs, monotonic: () => storeNow });

/** One case's venue in one backend: its two callers (on time, and BEHIND_MS behind) and the operator. */
interface BudgetRun {
  acquire(weight: number, behind: boolean): Promise<AcquireResult>;
  observe(usedWeight: number, windowStartMs: number): Promise<void>;
  setStatus(status: ConnectorStatus): Promise<void>;
  close(): Promise<void>;
}

interface Backend {
  name: string;
  open(rateLimit: RateLimit): Promise<BudgetRun>;
}

/** A venue in two stores over the same data (two processes: one on time, one BEHIND_MS behind). */
function storeRun(venue: string, onTime: StateStore, behind: StateStore): BudgetRun {
  return {
    acquire: (weight, late) => (late ? behind : onTime).budgets.acquire(venue, weight),
    observe: (usedWeight, windowStartMs) => onTime.budgets.observe(venue, usedWeight, windowStartMs),
    setStatus: async (status) => void (await onTime.connectors.setStatus(venue, status)),
    close: async () => void (await Promise.all([onTime.close(), behind.close()])),
  };
}

let dir: TempDir;
let redis: TestRedis;
let mongo: MongoWireHandle;

const BACKENDS: Backend[] = [
  {
    name: 'spec',
    open: async (rateLimit) => {
      let row = EMPTY_BUDGET_ROW;
      let status: ConnectorStatus = 'active';
      const { policy, periodMs } = rateLimit;
      return {
        acquire: async (weight, behind) => {
          const spent = decideAcquire(row, { policy, status, limit: effectiveLimit(rateLimit), periodMs, weight, nowMs: storeNow });
          row = spent.row;
          return onCallerClock(toAcquireResult(spent.decision), spent.decision.atMs - callerClock(behind ? BEHIND_MS : 0).now());
        },
        observe: async (usedWeight, windowStartMs) => {
          row = decideObserve(row, { policy, periodMs, usedWeight, windowStartMs, nowMs: storeNow });
        },
        setStatus: async (next) => {
          status = next;
        },
        close: async () => undefined,
      };
    },
  },
  {
    name: 'sqlite',
    open: async (rateLimit) => {
      const venue = venueName();
      const url = dir.sqliteUrl(`${venue}.db`);
      const onTime = await openStore(url, { clock: callerClock(0) });
      const behind = await openStore(url, { clock: callerClock(BEHIND_MS) });
      await onTime.connectors.upsert(connector(venue, { rateLimit }));
      return storeRun(venue, onTime, behind);
    },
  },
  {
    name: 'mongodb',
    open: async (rateLimit) => {
      const venue = venueName();
      const collectionPrefix = `c${randomUUID().slice(0, 8)}_`;
      const onTime = await openStore(mongo.url, { collectionPrefix, clock: callerClock(0) });
      const behind = await openStore(mongo.url, { collectionPrefix, clock: callerClock(BEHIND_MS) });
      await onTime.connectors.upsert(connector(venue, { rateLimit }));
      return storeRun(venue, onTime, behind);
    },
  },
  {
    name: 'redis',
    open: async (rateLimit) => {
      const venue = venueName();
      const connectors = await openStore(dir.sqliteUrl(`${venue}-connectors.db`));
      await connectors.connectors.upsert(connector(venue, { rateLimit }));
      const prefix = redis.namespace();
      const budgets = (behindMs: number): Promise<RedisBudgets> =>
        openRedisBudgets(redis.url, {
          connectors: connectors.connectors,
          prefix,
          connectorCacheMs: 0,
          clock: callerClock(behindMs),
          serverClock: { now: () => storeNow },
        });
      const [onTime, behind] = await Promise.all([budgets(0), budgets(BEHIND_MS)]);
      return {
        acquire: (weight, late) => (late ? behind : onTime).acquire(venue, weight),
        observe: (usedWeight, windowStartMs) => onTime.observe(venue, usedWeight, windowStartMs),
        setStatus: async (status) => void (await connectors.connectors.setStatus(venue, status)),
        close: async () => void (await Promise.all([onTime.close(), behind.close(), connectors.close()])),
      };
    },
  },
];

/** The table's expectation in absolute times. */
function absolute(e: Expected): Expected {
  if (e.ok) return e.windowStartMs === undefined ? e : { ...e, windowStartMs: T0 + e.windowStartMs };
  return { ...e, retryAtMs: T0 + e.retryAtMs };
}

beforeAll(async () => {
  dir = tempDir('tickfleet-budget-conformance-');
  redis = await startRedis();
  mongo = await startMongoWire({ clock: () => storeNow });
});
afterAll(async () => {
  await mongo.stop();
  await redis.stop();
  dir.remove();
});

describe('the budget arithmetic: one table, every implementation', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const results = new Map<string, AcquireResult[]>();
    for (const backend of BACKENDS) {
      storeNow = T0;
      const run = await backend.open(c.rateLimit);
      const out: AcquireResult[] = [];
      let lastAt = 0;
      let behindSeen = false;
      try {
        for (const step of c.steps) {
          if ('status' in step) {
            await run.setStatus(step.status);
            continue;
          }
          if (step.at < lastAt) throw new Error(`${c.name}: store times go back (${step.at} after ${lastAt})`);
          if ('acquire' in step && step.behind && !behindSeen && step.at !== lastAt)
            throw new Error(`${c.name}: a skewed caller's first step must be at the time of the step before it`);
          behindSeen ||= 'acquire' in step && step.behind === true;
          lastAt = step.at;
          storeNow = T0 + step.at;
          if ('observe' in step) await run.observe(step.observe, T0 + step.windowStartMs);
          else out.push(await run.acquire(step.acquire, step.behind === true));
        }
      } finally {
        await run.close();
      }
      results.set(backend.name, out);
    }

    // The specification gives the table's results...
    const spec = results.get('spec')!;
    const expected = c.steps.flatMap((s) => ('acquire' in s ? [absolute(s.expect)] : []));
    expect(spec).toHaveLength(expected.length);
    spec.forEach((r, i) => {
      expect(r).toMatchObject(expected[i]!);
      // A caller on time is never told its clock is off.
      if (expected[i]!.clockOffsetMs === undefined) expect(r.clockOffsetMs).toBeUndefined();
    });
    // ... and every backend exactly the specification's.
    for (const [name, got] of results) expect({ backend: name, results: got }).toEqual({ backend: name, results: spec });
  });
});
