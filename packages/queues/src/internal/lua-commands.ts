import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis-connection.js';

export type LuaCommand = (keys: string[], args: Array<string | number>) => Promise<unknown>;

const sources = new Map<string, { lua: string; numberOfKeys: number }>();

/**
 * Loads `commands/<file>` (named `<verb><Noun>-<numKeys>.lua`, as BullMQ names its scripts) into
 * `redis` with `defineCommand`, once per client, and returns a caller. ioredis sends EVALSHA and
 * falls back to EVAL after a NOSCRIPT (e.g. after a RedisClient restart).
 */
export function luaCommand(redis: RedisClient, dir: URL, file: string): LuaCommand {
  const m = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
  if (!m) throw new Error(`Lua command file ${file} is not named <name>-<numKeys>.lua`);
  const name = `tf_${m[1]}`;
  const numberOfKeys = Number(m[2]);
  const client = redis as unknown as Record<string, unknown>;
  if (typeof client[name] !== 'function') {
    const path = new URL(file, dir);
    let source = sources.get(path.href);
    if (!source) {
      source = { lua: readFileSync(path, 'utf8'), numberOfKeys };
      sources.set(path.href, source);
    }
    redis.defineCommand(name, source);
  }
  return (keys, args) => {
    if (keys.length !== numberOfKeys) throw new Error(`${file} takes ${numberOfKeys} keys, got ${keys.length}`);
    const fn = client[name] as (...a: Array<string | number>) => Promise<unknown>;
    return fn.call(redis, ...keys, ...args);
  };
}
