import { readFileSync } from 'node:fs';
import { luaCommand, type LuaCommand, type RedisClient } from '@tickfleet/queues';

/** The package's Lua scripts (`src/commands/<verb><Noun>-<numKeys>.lua`, each with its KEYS/ARGV header). */
const COMMANDS = new URL('../commands/', import.meta.url);

/** One of the package's Lua scripts, run on `redis` through the project's one loader (`luaCommand`). */
export function budgetCommand(redis: RedisClient, file: string): LuaCommand {
  return luaCommand(redis, COMMANDS, file);
}

/**
 * A script's source, for the one script a library runs itself (rate-limiter-flexible's
 * `customIncrTtlLuaScript`, see `consumeWindow-1.lua`): the library loads and calls it on its own client.
 */
export function budgetCommandSource(file: string): string {
  return readFileSync(new URL(file, COMMANDS), 'utf8');
}
