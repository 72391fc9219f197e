import { readFileSync } from 'node:fs';
import { ValidationError } from '@tickfleet/core';
import type { RedisClient } from './redis-connection.js';

/** Calls one Lua command with its keys (exactly as many as its file name says) and its arguments. */
export type LuaCommand = (keys: string[], args: Array<string | number>) => Promise<unknown>;

const sources = new Map<string, { lua: string; numberOfKeys: number }>();

/**
 * The one way tickfleet runs its own Lua on Redis (queues' locks and freeze extension, budget's
 * venue control and worker heartbeats): loads `<dir>/<file>`, named `<verb><Noun>-<numKeys>.lua`
 * as BullMQ names its scripts, into `redis` with `defineCommand` once per client, and returns a
 * caller. Declaring the key count lets ioredis route the call by its first key on a Redis
 * Cluster; ioredis sends EVALSHA and falls back to EVAL after a NOSCRIPT (e.g. after a Redis
 * restart). Each file is read from disk once per process.
 */
export function luaCommand(redis: RedisClient, dir: URL, file: string): LuaCommand {
  const m = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
  if (!m) throw new ValidationError('Lua command file', 'a name <verb><Noun>-<numKeys>.lua', file);
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
    if (keys.length !== numberOfKeys) throw new ValidationError(`keys of ${file}`, `${numberOfKeys} keys`, keys);
    const fn = client[name] as (...a: Array<string | number>) => Promise<unknown>;
    return fn.call(redis, ...keys, ...args);
  };
}
