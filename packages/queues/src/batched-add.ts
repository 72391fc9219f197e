import { createRequire } from 'node:module';
import type { IRedisTransaction, Queue, RedisQueueBackend } from 'bullmq';
import type { RedisClient } from './redis-connection.js';

/**
 * One `addBulk` as a few Redis script calls instead of one per job.
 *
 * BullMQ's `addBulk` builds every job (options, validation, msgpack) and then sends one EVALSHA of
 * its `addPrioritizedJob` / `addStandardJob` script per job in a pipeline. At 100,000 units a tick
 * that client side costs more CPU than Redis spends running the scripts (docs/benchmarks/scheduler.md).
 * Here BullMQ still builds every job and its arguments with its own code
 * (`RedisQueueBackend.addJobToTransaction`, handed a client that records the call instead of
 * sending it), and the recorded calls run in one script per {@link JOBS_PER_CALL} jobs: BullMQ's
 * own two scripts, from the installed package, each wrapped as a Lua function and called once per
 * job in order. The keys, hashes, events and ids that land in Redis are the ones BullMQ writes
 * (`batched-add.test.ts` compares them key by key with a plain `addBulk`).
 *
 * A job that needs another script (a delay, a parent) sends the whole `addBulk` through BullMQ's
 * own path, as does every `addBulk` if the installed BullMQ's scripts do not look as expected.
 */
const JOBS_PER_CALL = 250;

interface ScriptModule {
  name: string;
  content: string;
  keys: number;
}

type Backend = Pick<RedisQueueBackend, 'addJobs' | 'addJobToTransaction'>;
type Entry = Parameters<Backend['addJobs']>[0][number];
type BatchedCall = (...args: Array<string | Buffer>) => Promise<unknown>;

const COMMAND = 'tf_addJobsBatched';
const KEYS_PER_SCRIPT = 9;
/** The two scripts, in the order their keys are passed: what each recorded call's name starts with. */
const SCRIPTS = ['addPrioritizedJob', 'addStandardJob'] as const;

let lua: string | null | undefined;

/** The batch script built from the installed BullMQ's own add scripts, or null when they are not as expected. */
function batchedScript(): string | null {
  if (lua !== undefined) return lua;
  const require = createRequire(import.meta.url);
  const parts: string[] = [];
  for (const [i, name] of SCRIPTS.entries()) {
    let mod: Record<string, ScriptModule | undefined>;
    try {
      mod = require(`bullmq/dist/cjs/scripts/${name}-${KEYS_PER_SCRIPT}.js`) as Record<string, ScriptModule | undefined>;
    } catch {
      return (lua = null);
    }
    const script = mod[name];
    if (typeof script?.content !== 'string' || script.keys !== KEYS_PER_SCRIPT) return (lua = null);
    parts.push(`local function script${i + 1}(KEYS, ARGV)\n${script.content}\nend`);
  }
  const keyList = (from: number): string => Array.from({ length: KEYS_PER_SCRIPT }, (_, k) => `KEYS[${from + k}]`).join(', ');
  parts.push(`-- ARGV: per job, which script (1 or 2) and its three arguments; KEYS: script 1's 9, then script 2's 9.
local keys = { {${keyList(1)}}, {${keyList(KEYS_PER_SCRIPT + 1)}} }
local out = {}
for i = 1, #ARGV, 4 do
  local argv = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]}
  if ARGV[i] == "1" then
    out[#out + 1] = script1(keys[1], argv)
  else
    out[#out + 1] = script2(keys[2], argv)
  end
end
return out`);
  return (lua = parts.join('\n'));
}

/** One job's recorded script call: which script, and its arguments as BullMQ built them (9 keys, then 3 values). */
interface Recorded {
  script: 1 | 2;
  args: Array<string | Buffer>;
}

/**
 * The calls BullMQ would send for `entries`, or null when one of them is not a plain add of one of
 * the two scripts (a delayed or a parent job) or does not have the expected shape.
 */
function record(backend: Backend, entries: Entry[]): Recorded[] | null {
  const out: Recorded[] = [];
  let unexpected = false;
  const recorder = {
    runCommand(command: string, args: Array<string | Buffer>): Promise<string> {
      const script = SCRIPTS.findIndex((s) => command.startsWith(`${s}:`)) + 1;
      if (script === 0 || args.length !== KEYS_PER_SCRIPT + 3) unexpected = true;
      else out.push({ script: script as 1 | 2, args });
      return Promise.resolve('');
    },
  } as unknown as IRedisTransaction;
  for (const e of entries) {
    // Records synchronously: the call is made before addJobToTransaction's first await.
    void backend.addJobToTransaction(recorder, e.job, e.jobId, e.parentKeyOpts).catch(() => undefined);
    if (unexpected) return null;
  }
  return out.length === entries.length ? out : null;
}

/**
 * Makes `queue.addBulk` run BullMQ's add scripts {@link JOBS_PER_CALL} jobs per Redis call on
 * `redis` (the queue's own connection). Returns false, and leaves the queue as it is, when the
 * installed BullMQ's scripts cannot be wrapped.
 */
export function batchQueueAdds(queue: Queue, redis: RedisClient): boolean {
  const source = batchedScript();
  if (source === null) return false;
  const client = redis as unknown as Record<string, BatchedCall | undefined>;
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { lua: source, numberOfKeys: 2 * KEYS_PER_SCRIPT });
  const call = client[COMMAND]!.bind(redis);
  const backend = queue.backend as Backend;
  const addJobs = backend.addJobs.bind(backend);
  backend.addJobs = async (entries) => {
    const calls = record(backend, entries);
    if (calls === null) return addJobs(entries);
    const sends: Array<Promise<unknown>> = [];
    for (let i = 0; i < calls.length; i += JOBS_PER_CALL) {
      const part = calls.slice(i, i + JOBS_PER_CALL);
      // Every job of one queue has the same keys: one job's of each script stands for all.
      const keysOf = (script: 1 | 2): Array<string | Buffer> => (part.find((c) => c.script === script) ?? part[0]!).args.slice(0, KEYS_PER_SCRIPT);
      const argv: Array<string | Buffer> = [];
      for (const { script, args } of part) argv.push(String(script), args[KEYS_PER_SCRIPT]!, args[KEYS_PER_SCRIPT + 1]!, args[KEYS_PER_SCRIPT + 2]!);
      sends.push(call(...keysOf(1), ...keysOf(2), ...argv));
    }
    const ids: string[] = [];
    for (const [n, reply] of (await Promise.all(sends)).entries()) {
      const part = Math.min(JOBS_PER_CALL, calls.length - n * JOBS_PER_CALL);
      if (!Array.isArray(reply) || reply.length !== part) throw new Error(`${COMMAND}: expected ${part} job ids, got ${String(reply)}`);
      for (const id of reply as unknown[]) {
        if (typeof id === 'number' && id < 0) {
          throw new Error(`${COMMAND}: BullMQ's add script failed with code ${id} for job ${entries[ids.length]?.jobId ?? '?'}`);
        }
        ids.push(String(id));
      }
    }
    return ids;
  };
  return true;
}
