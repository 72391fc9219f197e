import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from './redis-connection.js';
import { UNIT_JOB_OPTIONS } from './job-options.js';
import { assertPrefix, QUEUE_PREFIX, queueNameFor } from './names.js';
import { unitPriority } from './priorities.js';
import type { QueuedUnit } from './queued-unit.js';
import { unitJobId } from './unit-job-id.js';

/**
 * Redis key of one BullMQ key of a venue's queue: `<prefix>:{<venue>}:<suffix>` (BullMQ's
 * `Queue.toKey`), e.g. its `limiter` or `meta`. For scripts outside BullMQ that must write a
 * queue key in the same step as their own (the venue freeze in `@tickfleet/budget`).
 */
export function queueKey(prefix: string, venue: string, suffix: string): string {
  return `${assertPrefix(prefix)}:${queueNameFor(venue)}:${suffix}`;
}

export interface VenueQueuesOptions {
  /** Key prefix of every queue. Tests pass a fresh one. @defaultValue QUEUE_PREFIX ('tickfleet') */
  prefix?: string;
  /** Options merged over {@link UNIT_JOB_OPTIONS} for every added unit. */
  jobOptions?: JobsOptions;
  /**
   * Connection errors BullMQ emits on a queue. The failing calls reject as well, so the default
   * ignores them (BullMQ would print each reconnect attempt to stderr when nobody listens).
   */
  onError?: (err: Error, venue: string) => void;
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

  constructor(
    private readonly connection: RedisClient,
    options: VenueQueuesOptions = {},
  ) {
    this.prefix = assertPrefix(options.prefix ?? QUEUE_PREFIX);
    this.jobOptions = { ...UNIT_JOB_OPTIONS, ...options.jobOptions };
    this.onError = options.onError ?? (() => undefined);
  }

  /** The queue of `venue` (created on first use; shares this instance's connection). */
  queue(venue: string): Queue<QueuedUnit> {
    let q = this.queues.get(venue);
    if (!q) {
      q = new Queue<QueuedUnit>(queueNameFor(venue), { connection: this.connection, prefix: this.prefix });
      q.on('error', (err) => this.onError(err, venue));
      this.queues.set(venue, q);
    }
    return q;
  }

  /** Venues whose queue this instance has opened. */
  venues(): string[] {
    return [...this.queues.keys()];
  }

  /** The RedisClient key of the BullMQ job hash of a unit id. */
  jobKey(venue: string, id: string): string {
    return queueKey(this.prefix, venue, id);
  }

  /** BullMQ options of one unit: its deterministic id, its priority, the trimming defaults. */
  optionsFor(unit: QueuedUnit): JobsOptions & { jobId: string } {
    return { ...this.jobOptions, jobId: unitJobId(unit), priority: unitPriority(unit) };
  }

  /**
   * Adds units to their venues' queues. A unit whose id is already in its queue is not added
   * again (BullMQ ignores a known custom id); the result says which were new. The existence check
   * runs first only to report duplicates — correctness rests on the deterministic id alone.
   */
  async enqueue(units: readonly QueuedUnit[], options: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    const byVenue = new Map<string, QueuedUnit[]>();
    for (const u of units) {
      const list = byVenue.get(u.venue) ?? [];
      list.push(u);
      byVenue.set(u.venue, list);
    }
    // Venues are independent queues (and cluster slots): enqueue them concurrently.
    const perVenue = await Promise.all([...byVenue].map(([venue, list]) => this.enqueueVenue(venue, list, options)));
    return perVenue.flat();
  }

  private async enqueueVenue(venue: string, list: QueuedUnit[], options: EnqueueOptions): Promise<EnqueueResult[]> {
    const results: EnqueueResult[] = [];
    const queue = this.queue(venue);
    const ids = list.map((u) => unitJobId(u));
    // One round trip for the whole batch: does each id exist, and has it finished? Only
    // finished ones (rare: a worker died before updating the store) need a second look.
    const pipeline = this.connection.pipeline();
    for (const id of ids) pipeline.hget(this.jobKey(venue, id), 'finishedOn').exists(this.jobKey(venue, id));
    const replies = (await pipeline.exec()) ?? [];
    const fresh: Array<{ name: string; data: QueuedUnit; opts: JobsOptions }> = [];
    for (const [i, unit] of list.entries()) {
      const id = ids[i] as string;
      const [finishedErr, finishedOn] = replies[2 * i] ?? [null, null];
      const [existsErr, exists] = replies[2 * i + 1] ?? [null, 0];
      if (finishedErr) throw finishedErr;
      if (existsErr) throw existsErr;
      if (exists !== 1) {
        fresh.push({ name: unit.kind, data: unit, opts: this.optionsFor(unit) });
        results.push({ id, venue, outcome: 'added' });
        continue;
      }
      if (finishedOn === null) {
        results.push({ id, venue, outcome: 'duplicate', existing: 'queued' });
        continue;
      }
      const state = await queue.getJobState(id);
      const existing = state === 'completed' || state === 'failed' ? state : 'queued';
      if (options.replaceFinished && existing !== 'queued') {
        await queue.remove(id);
        await queue.add(unit.kind, unit, this.optionsFor(unit));
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
