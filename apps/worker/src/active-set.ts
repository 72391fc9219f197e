import { TransientError } from '@tickfleet/core';
import { luaCommand, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import type { MarketMeta } from '@tickfleet/venues';

/** One instrument of a venue's active order-book set, with its market as discovery last saw it. */
export interface ActiveInstrument {
  symbol: string;
  market: MarketMeta;
  /** When it joined the set. */
  listedAtMs: number;
  /** When a discovery last listed it (sticky instruments keep the time they were last seen). */
  lastSeenMs: number;
}

/**
 * A venue's active set: the instruments its book polls may run, as one versioned snapshot. It is
 * written whole (one value) and read whole, so a poller sees the old set or the new one, never half.
 */
export interface ActiveSet {
  venue: string;
  version: number;
  atMs: number;
  instruments: Record<string, ActiveInstrument>;
}

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * The file a venue's active set is copied to on disk after each swap, as the order-book design
 * names it: `<jsonl root>/<venue>/state/active_instruments.snapshot.json`. Redis holds the set in
 * force (every worker on every host reads it there); the file is for users' tools.
 */
export const ACTIVE_SET_SNAPSHOT = 'active_instruments.snapshot.json';

/** How long a poller trusts its copy of a set before asking Redis for the version again. */
const VERSION_CHECK_MS = 1000;

/**
 * The venues' active sets in Redis (`<prefix>:venue:{<venue>}:active:set` and `:active:v`).
 * Discovery swaps a venue's set atomically ({@link swap}); pollers read it through a per-process
 * copy refreshed when the version changes ({@link current}), so polling never waits on discovery:
 * it reads whatever set is in force.
 */
export class ActiveSets {
  private readonly cache = new Map<string, { set: ActiveSet | null; checkedAtMs: number }>();
  private readonly swapCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    this.swapCmd = luaCommand(redis, COMMANDS, 'swapActiveSet-2.lua');
  }

  private keys(venue: string): [string, string] {
    const base = `${this.prefix}:venue:{${venue}}:active`;
    return [`${base}:v`, `${base}:set`];
  }

  /** The set in force, read from Redis now (discovery's read before it computes the next one). */
  async read(venue: string): Promise<ActiveSet | null> {
    const [, setKey] = this.keys(venue);
    const text = await this.redis.get(setKey);
    const set = text === null ? null : (JSON.parse(text) as ActiveSet);
    this.cache.set(venue, { set, checkedAtMs: this.monotonic() });
    return set;
  }

  /**
   * The set in force for a poller: this process's copy, re-checked against the stored version at
   * most once a second (one small GET), and fetched whole only when the version changed.
   */
  async current(venue: string): Promise<ActiveSet | null> {
    const cached = this.cache.get(venue);
    const now = this.monotonic();
    if (cached && now - cached.checkedAtMs < VERSION_CHECK_MS) return cached.set;
    const [versionKey] = this.keys(venue);
    const version = Number((await this.redis.get(versionKey)) ?? 0);
    if (cached && (cached.set?.version ?? 0) === version) {
      cached.checkedAtMs = now;
      return cached.set;
    }
    return this.read(venue);
  }

  /** This process's last copy of the venue's set, without any I/O (for telemetry and error records). */
  cached(venue: string): ActiveSet | null {
    return this.cache.get(venue)?.set ?? null;
  }

  /**
   * Replaces the venue's set with `next` (whose version must be `expectedVersion + 1`) if the stored
   * version is still `expectedVersion`; throws a TransientError (the discovery unit runs again)
   * when another discovery swapped it in between.
   */
  async swap(venue: string, expectedVersion: number, next: ActiveSet): Promise<void> {
    if (next.version !== expectedVersion + 1) throw new TransientError(venue, `active set version ${next.version} does not follow ${expectedVersion}`);
    const [versionKey, setKey] = this.keys(venue);
    // Set and version in one step, only over the version this discovery read (swapActiveSet-2.lua).
    const result = Number(await this.swapCmd([versionKey, setKey], [expectedVersion, JSON.stringify(next), next.version]));
    if (result !== -1) {
      throw new TransientError(venue, `active set of ${venue} changed during discovery (version ${result}, expected ${expectedVersion}); discovering again`);
    }
    this.cache.set(venue, { set: next, checkedAtMs: this.monotonic() });
  }
}
