import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { StateStore } from '@tickfleet/store';

/**
 * What a token may do through bull-board with `--allow-actions`. bull-board maps its buttons to
 * BullMQ calls that can undo what the fleet guarantees: `rate-limit/release` deletes the queue's
 * limiter key, which is how a venue's fleet-wide freeze (a 429 retry-after or a 418 ban) is
 * enforced; `rate-limit` replaces or removes the limiter configuration the freeze relies on;
 * `concurrency` sets the queue's global concurrency, the venue's in-flight cap; `obliterate`
 * deletes the queue with both. Those are guarded here; everything not listed is refused, so a
 * bull-board upgrade that adds a button adds nothing a token can do until it is reviewed.
 * The list is mirrored in docs/dashboard.md.
 */
export const BOARD_ACTIONS: ReadonlyArray<{ method: string; route: RegExp; action: string }> = [
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/[^/]+\/retry$/, action: 'retry one failed unit' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/retry\/(failed|completed)$/, action: 'retry every failed (or completed) unit of a queue' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/[^/]+\/promote$/, action: 'promote one delayed unit (it still waits for the budget)' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/promote$/, action: 'promote every delayed unit of a queue' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/[^/]+\/clean$/, action: 'remove one finished (completed or failed) unit' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/clean\/(failed|completed)$/, action: 'remove finished units of a queue' },
  { method: 'PATCH', route: /^\/api\/queues\/[^/]+\/[^/]+\/priority$/, action: "change a unit's priority" },
  { method: 'PATCH', route: /^\/api\/queues\/[^/]+\/[^/]+\/delay$/, action: "change a delayed unit's delay" },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/pause$/, action: 'pause a queue (no new units start)' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/resume$/, action: 'resume a queue paused from the board' },
  { method: 'PUT', route: /^\/api\/queues\/pause$/, action: 'pause every queue' },
  { method: 'PUT', route: /^\/api\/queues\/resume$/, action: 'resume every queue' },
  { method: 'PUT', route: /^\/api\/queues\/[^/]+\/concurrency$/, action: "set a queue's global concurrency, 1 up to the connector's --max-inflight" },
];

/** Why the other bull-board actions are refused (the 403 body names it). */
const REFUSED: ReadonlyArray<{ route: RegExp; reason: string }> = [
  {
    route: /\/rate-limit\/release$/,
    reason: "a venue's freeze (429 retry-after or 418 ban) ends on its own; releasing the limiter early would send requests the venue refuses",
  },
  { route: /\/rate-limit$/, reason: "the queue's limiter carries the fleet-wide freeze; venue budgets are set with tickfleet connectors upsert --limit" },
  {
    route: /\/obliterate$/,
    reason: 'obliterating a queue deletes its units, its concurrency cap and its freeze; use tickfleet backfill cancel or connectors disable',
  },
  { route: /\/empty$/, reason: 'queued units are owed work; cancel a backfill with tickfleet backfill cancel' },
  { route: /\/add$/, reason: 'units are planned by the scheduler and tickfleet backfill (deterministic ids, budgets); add a job or a backfill instead' },
  { route: /\/update-data$/, reason: "a unit's data is its plan (venue, range, backfill); changing it breaks progress accounting" },
];

export interface ActionGuardOptions {
  store: StateStore;
  /** The venue of a bull-board queue name (`{binance}` → `binance`), or undefined when unknown. */
  venueOf(queueName: string): string | undefined;
  /** BullMQ state of a unit (`waiting`, `failed`, … or `unknown`). */
  unitState(venue: string, unitId: string): Promise<string>;
}

function refuse(res: Response, status: number, error: string, expected: string): void {
  res.status(status).json({ error, expected });
}

/**
 * Sits in front of bull-board's router when actions are allowed: lets reads and the listed
 * actions through, checks a concurrency change against the venue's connector cap, and refuses
 * the rest with 403 and the reason.
 */
export function actionGuard(options: ActionGuardOptions): RequestHandler {
  const json = express.json({ limit: '16kb' });
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    const path = req.path;
    const allowed = BOARD_ACTIONS.find((a) => a.method === req.method && a.route.test(path));
    if (!allowed) {
      const reason = REFUSED.find((r) => r.route.test(path))?.reason ?? 'an action this dashboard allows (see docs/dashboard.md)';
      refuse(res, 403, 'action not allowed', reason);
      return;
    }
    const clean = /^\/api\/queues\/([^/]+)\/([^/]+)\/clean$/.exec(path);
    if (clean) {
      checkClean(options, safeDecode(clean[1]!), safeDecode(clean[2]!)).then(
        (problem) => (problem ? refuse(res, problem.status, problem.error, problem.expected) : next()),
        next,
      );
      return;
    }
    const concurrency = /^\/api\/queues\/([^/]+)\/concurrency$/.exec(path);
    if (!concurrency) return next();
    json(req, res, (err?: unknown) => {
      if (err) return refuse(res, 400, 'bad request body', 'JSON such as {"concurrency": 2}');
      checkConcurrency(options, safeDecode(concurrency[1]!), (req.body as { concurrency?: unknown } | undefined)?.concurrency).then(
        (problem) => (problem ? refuse(res, problem.status, problem.error, problem.expected) : next()),
        next,
      );
    });
  };
}

async function checkConcurrency(options: ActionGuardOptions, queueName: string, value: unknown): Promise<Problem> {
  const venue = options.venueOf(queueName);
  if (venue === undefined) return { status: 404, error: 'unknown queue', expected: 'a venue queue on the board' };
  const connector = await options.store.connectors.get(venue);
  if (!connector) return { status: 404, error: 'unknown venue', expected: `a connector for ${venue}` };
  const cap = connector.maxInflight;
  // 0 or less would make bull-board remove the global concurrency, lifting the cap altogether.
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > cap) {
    return {
      status: 422,
      error: 'concurrency out of range',
      expected: `an integer from 1 to ${venue}'s connector cap ${cap} (raise the cap with tickfleet connectors upsert ${venue} --max-inflight N), got ${JSON.stringify(value)}`,
    };
  }
  return null;
}

type Problem = { status: number; error: string; expected: string } | null;

/** bull-board's per-unit "clean" removes a unit in any state; a queued or running one is owed work. */
async function checkClean(options: ActionGuardOptions, queueName: string, unitId: string): Promise<Problem> {
  const venue = options.venueOf(queueName);
  if (venue === undefined) return { status: 404, error: 'unknown queue', expected: 'a venue queue on the board' };
  const state = await options.unitState(venue, unitId);
  if (state === 'completed' || state === 'failed' || state === 'unknown') return null;
  return {
    status: 403,
    error: 'action not allowed',
    expected: `a completed or failed unit (this one is ${state}: queued units are owed work; cancel a backfill with tickfleet backfill cancel)`,
  };
}

/** A path segment decoded; a malformed escape stays as it is (and then names no known queue). */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
