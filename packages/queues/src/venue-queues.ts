import { Queue, type JobsOptions } from 'bullmq';
import { ValidationError } from '@tickfleet/core';
import { batchQueueAdds } from './batched-add.js';
import { luaCommand, type LuaCommand } from './lua-command.js';
import type { RedisClient } from './redis-connection.js';
import { UNIT_JOB_OPTIONS } from './job-options.js';
import { assertPrefix, QUEUE_PREFIX, queueNameFor } from './names.js';
import { unitPriority } from './priorities.js';
import type { QueuedUnit } from './queued-unit.js';
import { unitJobId } from './unit-job-id.js';

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * Redis key of one BullMQ key of a venue's queue: `<prefix>:{<venue>}:<suffix>` (BullMQ's
 * `Queue.toKey`), e.g. its `limiter` or `meta`. For scripts outside BullMQ that must write a
 * queue key in the same step as their own (the venue freeze in `@tickfleet/budget`).
 */
export function queueKey(prefix: string, venue: string, suffix: string): string {
  return `${assertPrefix(prefix)}:${queueNameFor(venue)}:${suffix}`;
}

export interface VenueQueuesOptions {
  /** Key prefix of every queue. Tests pass a fresh one. @defaultValue {@link QUEUE_PREFIX} */
  prefix?: string;
  /** Options merged over {@link UNIT_JOB_OPTIONS} for every added unit. */
  jobOptions?: JobsOptions;
  /**
   * Connection errors BullMQ emits on a queue. The failing calls reject as well, so the default
   * ignores them (BullMQ would print each reconnect attempt to stderr when nobody listens).
   */
  onError?: (err: Error, venue: string) => void;
  /**
   * Whether `addBulk` on these queues runs BullMQ's add scripts for many units per Redis call
   * (batched-add.ts) instead of one call per unit. Only benchmarks and tests that measure or
   * compare against BullMQ's own path turn it off. @defaultValue true
   */
  batchedAdds?: boolean;
}

/** What happened to one unit given to {@link VenueQueues.enqueue}. */
export type EnqueueOutcome = 'added' | 'duplicate' | 'requeued';

export interface EnqueueResult {
  id: string;
  venue: string;
  outcome: EnqueueOutcome;
  /**
   * For duplicates and requeues: the unit already there was still `queued` (waiting, delayed or
   * running), or had finished (`completed`/`failed`).
   */
  existing?: 'queued' | 'completed' | 'failed';
}

export interface EnqueueOptions {
  /**
   * When a unit with the same id exists but already finished (completed or failed) — its worker
   * died before updating the store, or BullMQ failed it as stalled — remove that one and add the
   * unit again instead of dropping it, so the job is not stuck until the finished unit ages out.
   * Only the scheduler leader should pass this. @defaultValue false
   */
  replaceFinished?: boolean;
}

export type UnitCounts = Record<'waiting' | 'prioritized' | 'delayed' | 'active' | 'completed' | 'failed', number>;

/**
 * The venue queues of one RedisClient: a BullMQ `Queue` per venue (named by `queueNameFor`), created on
 * first use and closed together. All units are added here, with deterministic ids, priorities and
 * the trimming options of {@link UNIT_JOB_OPTIONS}.
 */
export class VenueQueues {
  readonly prefix: string;
  private readonly queues = new Map<string, Queue<QueuedUnit>>();
  private readonly jobOptions: JobsOptions;
  private readonly onError: (err: Error, venue: string) => void;
  private readonly checkUnits: LuaCommand;
  private readonly batchedAdds: boolean;

  constructor(
    private readonly connection: RedisClient,
    options: VenueQueuesOptions = {},
  ) {
    this.prefix = assertPrefix(options.prefix ?? QUEUE_PREFIX);
    this.jobOptions = { ...UNIT_JOB_OPTIONS, ...options.jobOptions };
    this.onError = options.onError ?? (() => undefined);
    this.batchedAdds = options.batchedAdds ?? true;
    this.checkUnits = luaCommand(connection, COMMANDS, 'checkUnits-1.lua');
  }

  /** The queue of `venue` (created on first use; shares this instance's connection). */
  queue(venue: string): Queue<QueuedUnit> {
    let q = this.queues.get(venue);
    if (!q) {
      q = new Queue<QueuedUnit>(queueNameFor(venue), { connection: this.connection, prefix: this.prefix });
      q.on('error', (err) => this.onError(err, venue));
      if (this.batchedAdds) batchQueueAdds(q, this.connection);
      this.queues.set(venue, q);
    }
    return q;
  }

  /** Venues whose queue this instance has opened. */
  venues(): string[] {
    return [...this.queues.keys()];
  }

  /** BullMQ options of one unit: its deterministic id, its priority, the trimming defaults. */
  optionsFor(unit: QueuedUnit, jobId: string = unitJobId(unit)): JobsOptions & { jobId: string } {
    return { ...this.jobOptions, jobId, priority: unitPriority(unit) };
  }

  /**
   * Adds units to their venues' queues. A unit whose id is already in its queue is not added
   * again (BullMQ ignores a known custom id); the result says which were new. The existence check
   * runs first only to report duplicates and to find finished units — correctness rests on the
   * deterministic id alone: a unit added by someone else between the check and the add is still
   * added once.
   */
  async enqueue(units: readonly QueuedUnit[], options: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    const byVenue = new Map<string, QueuedUnit[]>();
    for (const u of units) {
      const list = byVenue.get(u.venue);
      if (list) list.push(u);
      else byVenue.set(u.venue, [u]);
    }
    // Venues are independent queues (and cluster slots): enqueue them concurrently.
    const perVenue = await Promise.all([...byVenue].map(([venue, list]) => this.enqueueVenue(venue, list, options)));
    return perVenue.length === 1 ? perVenue[0]! : perVenue.flat();
  }

  private async enqueueVenue(venue: string, list: QueuedUnit[], options: EnqueueOptions): Promise<EnqueueResult[]> {
    const results: EnqueueResult[] = [];
    const queue = this.queue(venue);
    const ids = list.map((u) => unitJobId(u));
    // One script call for the whole batch (checkUnits-1.lua): 0 absent, 1 queued, 2 finished.
    // Only finished ones (rare: a worker died before updating the store) need a second look.
    const states = (await this.checkUnits([queueKey(this.prefix, venue, 'meta')], [queueKey(this.prefix, venue, ''), ...ids])) as number[];
    if (!Array.isArray(states) || states.length !== ids.length) {
      throw new ValidationError('checkUnits-1.lua reply', `an array of ${ids.length} states`, states);
    }
    const fresh: Array<{ name: string; data: QueuedUnit; opts: JobsOptions }> = [];
    // An id given twice in one call is added once: the second is a duplicate of the first.
    const seen = new Set<string>();
    for (const [i, unit] of list.entries()) {
      const id = ids[i]!;
      const state = states[i];
      if (seen.has(id)) {
        results.push({ id, venue, outcome: 'duplicate', existing: 'queued' });
        continue;
      }
      seen.add(id);
      if (state === 0) {
        fresh.push({ name: unit.kind, data: unit, opts: this.optionsFor(unit, id) });
        results.push({ id, venue, outcome: 'added' });
        continue;
      }
      if (state === 1) {
        results.push({ id, venue, outcome: 'duplicate', existing: 'queued' });
        continue;
      }
      const jobState = await queue.getJobState(id);
      const existing = jobState === 'completed' || jobState === 'failed' ? jobState : 'queued';
      if (options.replaceFinished && existing !== 'queued') {
        await queue.remove(id);
        await queue.add(unit.kind, unit, this.optionsFor(unit, id));
        results.push({ id, venue, outcome: 'requeued', existing });
      } else {
        results.push({ id, venue, outcome: 'duplicate', existing });
      }
    }
    if (fresh.length > 0) await queue.addBulk(fresh);
    return results;
  }

  /**
   * Caps the venue's in-flight units across every worker process (BullMQ global concurrency), so
   * scaling workers never multiplies a venue's concurrency.
   */
  async setGlobalConcurrency(venue: string, concurrency: number): Promise<void> {
    await this.queue(venue).setGlobalConcurrency(Math.max(1, Math.floor(concurrency)));
  }

  globalConcurrency(venue: string): Promise<number | null> {
    return this.queue(venue).getGlobalConcurrency();
  }

  /**
   * Remaining TTL of the venue queue's limiter key in ms (0 when unset): what BullMQ obeys. It is
   * derived from the venue's freeze record by `FleetVenueControl` (`@tickfleet/budget`), the one
   * writer of freezes; read the record there, this is the queue-level view (`tickfleet queues`).
   */
  async frozenForMs(venue: string): Promise<number> {
    return Math.max(0, await this.queue(venue).getRateLimitTtl());
  }

  /** Unit counts of the venue's queue by state. */
  async counts(venue: string): Promise<UnitCounts> {
    const c = await this.queue(venue).getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed');
    return {
      waiting: c.waiting ?? 0,
      prioritized: c.prioritized ?? 0,
      delayed: c.delayed ?? 0,
      active: c.active ?? 0,
      completed: c.completed ?? 0,
      failed: c.failed ?? 0,
    };
  }

  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map((q) => q.close()));
  }
}
