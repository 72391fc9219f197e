import type { RedisClient } from '@tickfleet/queues';

/**
 * Takes a stream's checkpoint for a new holder: raises the fence to the holder's lease token (a
 * lower one is refused) and returns every field. KEYS[1] the checkpoint hash; ARGV[1] the token.
 * Reply: `false` when a newer holder fenced it, else the flat hash.
 */
const CLAIM = `
local fence = tonumber(redis.call('HGET', KEYS[1], '_token') or '0')
local token = tonumber(ARGV[1])
if token < fence then return false end
redis.call('HSET', KEYS[1], '_token', ARGV[1])
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Moves a checkpoint forward: each symbol's last stored trade id becomes the larger of the stored
 * and the given one. Refused (0) when a holder with a higher token has claimed the checkpoint.
 * KEYS[1] the hash; ARGV[1] the token, then symbol, id pairs.
 */
const ADVANCE = `
local fence = tonumber(redis.call('HGET', KEYS[1], '_token') or '0')
if tonumber(ARGV[1]) < fence then return 0 end
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], 't:' .. ARGV[i]) or '-1')
  if tonumber(ARGV[i + 1]) > cur then redis.call('HSET', KEYS[1], 't:' .. ARGV[i], ARGV[i + 1]) end
end
return 1
`;

/**
 * Per-stream checkpoints in Redis: the last trade id stored (durable in the sink or the spool) per
 * symbol, written only after the pipeline's push resolved. A new holder resumes its session from
 * them, so the trades between the old holder's last stored one and the new connection are healed
 * from REST or reported. The hash carries the token of the newest holder that claimed it, so a
 * holder that lost its lease while paused cannot move it anymore (`advance` returns false).
 */
export class StreamCheckpoints {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** `<prefix>:stream:{<name>}:checkpoint`: one key per stream, so each script touches one Cluster slot. */
  key(name: string): string {
    return `${this.prefix}:stream:{${name}}:checkpoint`;
  }

  /** Claims the checkpoint for `token`; null when a holder with a higher token claimed it since (this lease is stale). */
  async claim(name: string, token: number): Promise<Record<string, number> | null> {
    const flat = (await this.redis.eval(CLAIM, 1, this.key(name), String(token))) as string[] | null;
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
    const args = [String(token)];
    for (const [symbol, id] of lastIds) args.push(symbol, String(id));
    return (await this.redis.eval(ADVANCE, 1, this.key(name), ...args)) === 1;
  }
}
