import { randomUUID } from 'node:crypto';
import type { RedisClient } from './redis-connection.js';
import { luaCommand, luaCommandName, type LuaCommand } from './lua-command.js';

const COMMANDS = new URL('./commands/', import.meta.url);
/** The names the two lock scripts' commands have on the client and its pipelines (batched calls). */
const ACQUIRE = luaCommandName('acquireLock-1.lua');
const RELEASE = luaCommandName('releaseLock-1.lua');

/**
 * A lease on one Redis key: SET NX PX to take it, token-checked Lua to extend and release it, so
 * a holder can never extend or delete a lock it has lost. The base of the scheduler's leader lock
 * and of {@link JobLock}.
 */
export class RedisMutex {
  private readonly acquireCmd: LuaCommand;
  private readonly extendCmd: LuaCommand;
  private readonly releaseCmd: LuaCommand;

  constructor(private readonly redis: RedisClient) {
    this.acquireCmd = luaCommand(redis, COMMANDS, 'acquireLock-1.lua');
    this.extendCmd = luaCommand(redis, COMMANDS, 'extendLock-1.lua');
    this.releaseCmd = luaCommand(redis, COMMANDS, 'releaseLock-1.lua');
  }

  /** A fresh random token identifying one holder. */
  static newToken(): string {
    return randomUUID();
  }

  /**
   * Takes `key` for `ttlMs`, or refreshes it when `token` already holds it. `releases` (key →
   * token, each released only if that token holds it) are sent first in the same pipeline: one
   * round trip. On a Redis Cluster their keys must share `key`'s slot; their outcomes are not
   * reported (a release that fails leaves the lock to its TTL).
   */
  async acquire(key: string, token: string, ttlMs: number, releases?: ReadonlyMap<string, string>): Promise<boolean> {
    const ttl = Math.max(1, Math.round(ttlMs));
    if (!releases?.size) return (await this.acquireCmd([key], [token, ttl])) === 1;
    const pipeline = this.redis.pipeline() as unknown as Record<string, (...args: Array<string | number>) => unknown> & { exec(): Promise<unknown> };
    for (const [k, t] of releases) pipeline[RELEASE]!(k, t);
    pipeline[ACQUIRE]!(key, token, ttl);
    const replies = (await pipeline.exec()) as Array<[Error | null, unknown]> | null;
    const reply = replies?.at(-1);
    if (!reply) throw new Error(`lock ${key}: the pipeline returned no reply (connection closed)`);
    if (reply[0]) throw reply[0];
    return reply[1] === 1;
  }

  /** Releases each key its token holds (key → token), in one pipeline; their keys must share one slot on a Redis Cluster. */
  async releaseAll(releases: ReadonlyMap<string, string>): Promise<void> {
    const [only] = releases;
    if (releases.size === 1 && only) {
      await this.release(only[0], only[1]);
      return;
    }
    const pipeline = this.redis.pipeline() as unknown as Record<string, (...args: Array<string | number>) => unknown> & { exec(): Promise<unknown> };
    for (const [k, t] of releases) pipeline[RELEASE]!(k, t);
    await pipeline.exec();
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
