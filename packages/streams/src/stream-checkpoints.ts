import { luaCommand, type LuaCommand, type RedisClient } from '@tickfleet/queues';

const COMMANDS = new URL('./commands/', import.meta.url);

/**
 * Per-stream checkpoints in Redis: the last trade id stored (durable in the sink or the spool) per
 * symbol, written only after the pipeline's push resolved. A new holder resumes its session from
 * them, so the trades between the old holder's last stored one and the new connection are healed
 * from REST or reported. The hash carries the token of the newest holder that claimed it, so a
 * holder that lost its lease while paused cannot move it anymore (`advance` returns false).
 */
export class StreamCheckpoints {
  private readonly claimCmd: LuaCommand;
  private readonly advanceCmd: LuaCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.claimCmd = luaCommand(redis, COMMANDS, 'claimStreamCheckpoint-1.lua');
    this.advanceCmd = luaCommand(redis, COMMANDS, 'advanceStreamCheckpoint-1.lua');
  }

  /** `<prefix>:stream:{<name>}:checkpoint`: one key per stream, so each script touches one Cluster slot. */
  key(name: string): string {
    return `${this.prefix}:stream:{${name}}:checkpoint`;
  }

  /** Claims the checkpoint for `token`; null when a holder with a higher token claimed it since (this lease is stale). */
  async claim(name: string, token: number): Promise<Record<string, number> | null> {
    const flat = (await this.claimCmd([this.key(name)], [token])) as string[] | null;
    if (!flat) return null;
    const out: Record<string, number> = {};
    for (let i = 0; i < flat.length; i += 2) {
      const field = flat[i]!;
      if (field.startsWith('t:')) out[field.slice(2)] = Number(flat[i + 1]);
    }
    return out;
  }

  /** Each symbol's last stored trade id as the checkpoint holds it now, without claiming it (benchmarks, status). */
  async read(name: string): Promise<Record<string, number>> {
    const all = await this.redis.hgetall(this.key(name));
    return Object.fromEntries(Object.entries(all).flatMap(([field, v]) => (field.startsWith('t:') ? [[field.slice(2), Number(v)]] : [])));
  }

  /** Raises the checkpoint of each symbol to at least its given trade id; false when a newer holder fenced this token out. */
  async advance(name: string, token: number, lastIds: ReadonlyMap<string, number>): Promise<boolean> {
    if (lastIds.size === 0) return true;
    const args: Array<string | number> = [token];
    for (const [symbol, id] of lastIds) args.push(symbol, id);
    return (await this.advanceCmd([this.key(name)], args)) === 1;
  }
}
