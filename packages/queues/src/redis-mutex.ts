import { randomUUID } from 'node:crypto';
import type { RedisClient } from './redis-connection.js';
import { luaCommand, type LuaCommand } from './lua-command.js';

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * A lease on one Redis key: SET NX PX to take it, token-checked Lua to extend and release it, so
 * a holder can never extend or delete a lock it has lost. The base of the scheduler's leader lock.
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

  /** Takes `key` for `ttlMs`, or refreshes it when `token` already holds it. */
  async acquire(key: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.acquireCmd([key], [token, Math.max(1, Math.round(ttlMs))])) === 1;
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
