import { renewEveryMsFor, systemClock, ValidationError, type Clock } from '@tickfleet/core';
import { assertPrefix, luaCommand, QUEUE_PREFIX, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { STREAM_DEFAULTS } from './stream-defaults.js';

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * Why a worker stopped holding a stream:
 * - `balance`: released because the worker held more than its fair share (more workers joined);
 * - `expired`: the lease ran out before a renewal (paused process, Redis unreachable); another
 *   worker may hold it now, under a higher token;
 * - `removed`: the stream left the stream set;
 * - `released`: {@link StreamLeases.releaseAll} (graceful shutdown).
 */
export type StreamLostReason = 'balance' | 'expired' | 'removed' | 'released';

export interface StreamLeasesOptions {
  /** Key prefix (namespace) of the fleet. @defaultValue QUEUE_PREFIX ('tickfleet') */
  prefix?: string;
  /** Which set of leases within the fleet: `streams`, or another user of the same scheme (the book poll loop's shares). @defaultValue 'streams' */
  group?: string;
  /** Lease and membership lifetime: a dead worker's streams free up after this long. @defaultValue {@link STREAM_DEFAULTS.leaseTtlMs} */
  ttlMs?: number;
  /** How often {@link StreamLeases.start} runs a cycle. @defaultValue a third of ttlMs ({@link renewEveryMsFor}) */
  renewEveryMs?: number;
  /** Only its monotonic time is used (see {@link StreamLeases.isHeld}): expiries are on the Redis server's clock. @defaultValue systemClock */
  clock?: Clock;
  /** A stream is now this worker's, under `token`: start its session. */
  onAcquired?: (name: string, token: number) => void;
  /** A stream is no longer this worker's: stop its session before it writes again. */
  onLost?: (name: string, reason: StreamLostReason) => void;
  /**
   * A cycle of the {@link StreamLeases.start} timer failed, or a callback threw. Required by start().
   * @defaultValue none: a callback's error is rethrown from tick() / releaseAll()
   */
  onError?: (err: unknown) => void;
}

/** What one cycle found and did. */
export interface LeaseCycle {
  /** Live workers, this one included. */
  live: number;
  /** ceil(streams / live): the most this worker keeps after the cycle. */
  fairShare: number;
  /** Streams this worker holds after the cycle, with their tokens. */
  held: Map<string, number>;
  acquired: Array<{ name: string; token: number }>;
  lost: Array<{ name: string; reason: StreamLostReason }>;
}

/** A lease as Redis holds it now (for status pages and tests). */
export interface StreamHolder {
  worker: string;
  token: number;
  expiresAt: number;
  acquiredAt: number;
}

interface LocalLease {
  token: number;
  /** Monotonic time until which this worker may act on the lease (see {@link StreamLeases.isHeld}). */
  validUntil: number;
}

/** Keys of the fleet's stream leases: one hash tag, so each cycle's script runs in one Cluster slot. */
export function streamLeaseKeys(prefix: string, group = 'streams'): { members: string; leases: string; epochs: string; nudge: string } {
  const base = `${assertPrefix(prefix)}:${group}:{${group}}`;
  return { members: `${base}:workers`, leases: `${base}:leases`, epochs: `${base}:epochs`, nudge: `${base}:nudge` };
}

/**
 * Assigns the fleet's named streams to live workers through Redis leases (see docs/streams-fleet.md).
 * Each stream is held by at most one worker; a holder renews its leases every cycle (one Lua call
 * for all of them); a worker keeps at most its fair share, ceil(streams / live workers), releasing
 * the newest acquired surplus when workers join and taking free or expired streams when it is below.
 * Every acquisition carries a fencing token (an epoch per stream that only grows), and a session
 * checks {@link isHeld} before it writes.
 */
export class StreamLeases {
  private readonly prefix: string;
  private readonly group: string;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly clock: Clock;
  private readonly cycleCmd: LuaCommand;
  private readonly releaseCmd: LuaCommand;
  private readonly readCmd: LuaCommand;
  private streams: string[] = [];
  private version: number | undefined;
  private readonly local = new Map<string, LocalLease>();
  /** Serialises cycles and releaseAll, so their diffs against `local` never interleave. */
  private running: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private subscriber: RedisClient | undefined;
  /** Whether this worker announced itself since it (re)joined; see {@link nudge}. */
  private announced = false;

  /**
   * @param workerId - unique among live workers: two processes under one id would both act as the
   *   holder of its streams (a restarted process under its old id takes its old leases back).
   */
  constructor(
    private readonly redis: RedisClient,
    readonly workerId: string,
    private readonly options: StreamLeasesOptions = {},
  ) {
    if (!/^\S{1,200}$/.test(workerId)) throw new ValidationError('workerId', '1-200 characters without whitespace', workerId);
    this.prefix = assertPrefix(options.prefix ?? QUEUE_PREFIX);
    this.group = options.group ?? 'streams';
    if (!/^[a-z][a-z0-9-]{0,40}$/.test(this.group)) throw new ValidationError('group', 'a lower-case name such as streams', options.group);
    this.ttlMs = options.ttlMs ?? STREAM_DEFAULTS.leaseTtlMs;
    if (!Number.isInteger(this.ttlMs) || this.ttlMs < 10) throw new ValidationError('ttlMs', 'an integer of at least 10 ms', options.ttlMs);
    this.renewEveryMs = options.renewEveryMs ?? renewEveryMsFor(this.ttlMs);
    if (!(this.renewEveryMs > 0 && this.renewEveryMs < this.ttlMs)) {
      throw new ValidationError('renewEveryMs', `more than 0 and less than ttlMs (${this.ttlMs})`, options.renewEveryMs);
    }
    this.clock = options.clock ?? systemClock;
    this.cycleCmd = luaCommand(redis, COMMANDS, 'cycleStreamLeases-3.lua');
    this.releaseCmd = luaCommand(redis, COMMANDS, 'releaseStreamLeases-2.lua');
    this.readCmd = luaCommand(redis, COMMANDS, 'readStreamLeases-1.lua');
  }

  /**
   * Sets the stream set (names from the stream definitions) as of `version`; the next cycle acts on
   * it. A version older than the one set is ignored (a slow read must not bring back a removed
   * stream). Returns whether the set was taken.
   */
  setStreams(names: readonly string[], version: number): boolean {
    if (!Number.isFinite(version)) throw new ValidationError('version', 'a finite number', version);
    if (this.version !== undefined && version < this.version) return false;
    for (const name of names) {
      if (typeof name !== 'string' || name.length === 0) throw new ValidationError('stream name', 'a non-empty string', name);
    }
    this.streams = [...new Set(names)];
    this.version = version;
    return true;
  }

  /**
   * Whether this worker still holds `name` under `token`: no Redis call, so a session can ask
   * before every write. False once a cycle found the lease lost or taken over, and also when the
   * last successful renewal is older than the TTL (the lease may have expired in Redis while this
   * process was paused or cut off).
   */
  isHeld(name: string, token: number): boolean {
    const lease = this.local.get(name);
    return lease !== undefined && lease.token === token && this.clock.monotonic() < lease.validUntil;
  }

  /** The streams this worker holds now, with their tokens. */
  held(): Map<string, number> {
    const now = this.clock.monotonic();
    return new Map([...this.local].filter(([, l]) => now < l.validUntil).map(([name, l]) => [name, l.token]));
  }

  /**
   * One cycle: renew, rebalance and take streams, then report acquisitions and losses to the
   * callbacks. Leases whose renewal is overdue are reported lost (`expired`) even when Redis
   * cannot be reached; the error of the failed call is thrown after.
   */
  tick(): Promise<LeaseCycle> {
    // Before its set is known a worker would join as live yet take nothing, shrinking the others' share.
    if (this.version === undefined) return Promise.reject(new ValidationError('stream set', 'setStreams() before the first cycle'));
    return this.serial(() => this.cycle());
  }

  /**
   * Leaves the fleet's streams at once (graceful shutdown): drops this worker's membership and
   * leases and nudges, so the others take the streams at once, without waiting for the TTL.
   * Reports every held stream lost (`released`). A later tick joins again.
   */
  releaseAll(): Promise<string[]> {
    return this.serial(async () => {
      const { members, leases } = streamLeaseKeys(this.prefix, this.group);
      const released = (await this.releaseCmd([members, leases], [this.workerId])) as string[];
      this.announced = false;
      this.nudge();
      const names = [...this.local.keys()];
      this.local.clear();
      const errors: unknown[] = [];
      for (const name of names) this.call(() => this.options.onLost?.(name, 'released'), errors);
      this.raise(errors);
      return released;
    });
  }

  /**
   * Runs a cycle every `renewEveryMs` until {@link stop}, and at once when another worker nudges
   * (it released streams or joined): a subscriber connection (a duplicate of the client) listens.
   * Failures go to `onError`, required here: nothing else would see them.
   */
  start(): void {
    if (this.timer) return;
    const onError = this.options.onError;
    if (!onError) throw new ValidationError('onError', 'an onError callback for the failures of timed cycles');
    let inFlight = false;
    let again = false;
    const run = (): void => {
      // Cycles never stack up (a slow Redis); a nudge during a cycle runs one more after it.
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      this.tick()
        .then(
          () => undefined,
          (err: unknown) => onError(err),
        )
        .finally(() => {
          inFlight = false;
          if (again && this.timer) {
            again = false;
            run();
          }
        });
    };
    this.timer = setInterval(run, this.renewEveryMs);
    const { nudge } = streamLeaseKeys(this.prefix, this.group);
    const subscriber = this.redis.duplicate();
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, from: string) => {
      if (channel === nudge && from !== this.workerId) run();
    });
    // The first cycle announces this worker: it runs once the subscriber listens, so the holders'
    // answering nudge (they shed their surplus) is not missed.
    subscriber.subscribe(nudge).then(run, (err: unknown) => {
      onError(err);
      run();
    });
  }

  /** Stops the timer and the subscriber, and releases every stream (see {@link releaseAll}). */
  async stop(): Promise<string[]> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    subscriber?.disconnect();
    return this.releaseAll();
  }

  /** Every lease in Redis now, by stream name (expired ones excluded, on the server's clock). */
  async holders(): Promise<Map<string, StreamHolder>> {
    const flat = (await this.readCmd([streamLeaseKeys(this.prefix, this.group).leases], [])) as string[];
    const out = new Map<string, StreamHolder>();
    for (let i = 0; i < flat.length; i += 2) {
      const m = /^(\d+)\|(\d+)\|(\d+)\|(.*)$/s.exec(flat[i + 1]!);
      if (m) out.set(flat[i]!, { expiresAt: Number(m[1]), token: Number(m[2]), acquiredAt: Number(m[3]), worker: m[4]! });
    }
    return out;
  }

  private async cycle(): Promise<LeaseCycle> {
    const { members, leases, epochs } = streamLeaseKeys(this.prefix, this.group);
    const sentAt = this.clock.monotonic();
    let reply: [number, number, number, Array<string | number>, string[], string[], number];
    try {
      reply = (await this.cycleCmd([members, leases, epochs], [this.workerId, this.ttlMs, ...this.streams])) as typeof reply;
    } catch (err) {
      const errors: unknown[] = [];
      const now = this.clock.monotonic();
      for (const [name, lease] of [...this.local]) {
        if (now < lease.validUntil) continue;
        this.local.delete(name);
        this.call(() => this.options.onLost?.(name, 'expired'), errors);
      }
      this.raise(errors);
      throw err;
    }
    const [, live, fairShare, heldFlat, balanced, removed, reaped] = reply;
    // Redis set each expiry to its own now + ttl, and its now is no earlier than sentAt: acting
    // until sentAt + ttl by the local monotonic clock never outlives the lease.
    const validUntil = sentAt + this.ttlMs;
    const held = new Map<string, number>();
    for (let i = 0; i < heldFlat.length; i += 2) held.set(String(heldFlat[i]), Number(heldFlat[i + 1]));
    const why = new Map<string, StreamLostReason>([...balanced.map((n) => [n, 'balance'] as const), ...removed.map((n) => [n, 'removed'] as const)]);
    const lost: LeaseCycle['lost'] = [];
    const acquired: LeaseCycle['acquired'] = [];
    for (const [name, lease] of this.local) {
      if (held.get(name) !== lease.token) lost.push({ name, reason: why.get(name) ?? 'expired' });
    }
    for (const [name, token] of held) {
      if (this.local.get(name)?.token !== token) acquired.push({ name, token });
    }
    for (const { name } of lost) this.local.delete(name);
    for (const [name, token] of held) this.local.set(name, { token, validUntil });
    // Released streams wait for a taker, a newcomer for the holders to shed their surplus, and a
    // dead worker's streams (freed as its membership lapsed) for the others' grown shares: all
    // tell the others to cycle now rather than at their next period.
    if (balanced.length > 0 || removed.length > 0 || Number(reaped) > 0 || !this.announced) {
      this.announced = true;
      this.nudge();
    }
    const errors: unknown[] = [];
    for (const { name, reason } of lost) this.call(() => this.options.onLost?.(name, reason), errors);
    for (const { name, token } of acquired) this.call(() => this.options.onAcquired?.(name, token), errors);
    this.raise(errors);
    return { live: Number(live), fairShare: Number(fairShare), held, acquired, lost };
  }

  /**
   * Asks the started workers to run a cycle now. Best effort: a lost nudge only means the others
   * act on their next timed cycle, as they would without one.
   */
  private nudge(): void {
    this.redis.publish(streamLeaseKeys(this.prefix, this.group).nudge, this.workerId).then(
      () => undefined,
      () => undefined,
    );
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.running.then(fn, fn);
    this.running = next.catch(() => undefined);
    return next;
  }

  private call(fn: () => void, errors: unknown[]): void {
    try {
      fn();
    } catch (err) {
      errors.push(err);
    }
  }

  /** A callback's error goes to onError when set, else out of the call that ran it (after the others ran). */
  private raise(errors: unknown[]): void {
    if (errors.length === 0) return;
    if (this.options.onError) for (const err of errors) this.options.onError(err);
    else throw errors[0];
  }
}
