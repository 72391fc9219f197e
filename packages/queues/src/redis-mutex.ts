import { randomUUID } from 'node:crypto';
import type { RedisClient } from './redis-connection.js';
import { luaCommand, type LuaCommand } from './lua-command.js';

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * A lease on one Redis key: SET NX PX to take it, token-checked Lua to extend and release it, so
 * a holder can never extend or delete a lock it has lost. The base of the scheduler's leader lock
 * and of {@link JobLock}.
 */
export class RedisMutex {
  private readonly acquireCmd: LuaCommand;
  private readonly extendCmd: LuaCommand;
  private readonly releaseCmd: LuaCommand;
  private readonly releaseAndAcquireCmd: LuaCommand;

  constructor(private readonly redis: RedisClient) {
    this.acquireCmd = luaCommand(redis, COMMANDS, 'acquireLock-1.lua');
    this.extendCmd = luaCommand(redis, COMMANDS, 'extendLock-1.lua');
    this.releaseCmd = luaCommand(redis, COMMANDS, 'releaseLock-1.lua');
    this.releaseAndAcquireCmd = luaCommand(redis, COMMANDS, 'releaseAndAcquireLock-2.lua');
  }

  /** A fresh random token identifying one holder. */
  static newToken(): string {
    return randomUUID();
  }

  /**
   * Takes `key` for `ttlMs`, or refreshes it when `token` already holds it. `releases` (key →
   * token, each released only if that token holds it) go first: one of them in the same script
   * call (one round trip), any others each by itself without being awaited. On a Redis Cluster
   * their keys must share `key`'s slot; their outcomes are not reported (a release that fails
   * leaves the lock to its TTL).
   */
  async acquire(key: string, token: string, ttlMs: number, releases?: ReadonlyMap<string, string>): Promise<boolean> {
    const ttl = Math.max(1, Math.round(ttlMs));
    const [first, ...others] = releases ?? [];
    if (!first) return (await this.acquireCmd([key], [token, ttl])) === 1;
    for (const [k, t] of others) void this.release(k, t).catch(() => false);
    return (await this.releaseAndAcquireCmd([first[0], key], [first[1], token, ttl])) === 1;
  }

  /** Releases each key its token holds (key → token); their keys must share one slot on a Redis Cluster. */
  async releaseAll(releases: ReadonlyMap<string, string>): Promise<void> {
    await Promise.all([...releases].map(([k, t]) => this.release(k, t)));
  }

  /** Extends `key` to `ttlMs` from now if `token` still holds it. */
  async extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.extendCmd([key], [token, Math.max(1, Math.round(ttlMs))])) === 1;
  }

  /** Deletes `key` if `token` holds it. */
  async release(key: string, token: string): Promise<boolean> {
    return (await this.releaseCmd([key], [token])) === 1;
  }

  /** The token holding `key`, or null. */
  async holder(key: string): Promise<string | null> {
    return this.redis.get(key);
  }
}
