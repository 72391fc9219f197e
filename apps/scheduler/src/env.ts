import { z } from 'zod';
import { ConfigError, parseDurationMs, REDIS_PREFIX_EXPECTED, REDIS_PREFIX_PATTERN, REDIS_URL_EXPECTED, REDIS_URL_PATTERN } from '@tickfleet/core';

/** A duration variable: `1500`, `500ms`, `2s`, `5m`. */
const duration = z
  .string()
  .transform((v, ctx) => {
    const ms = parseDurationMs(v);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({ code: 'custom', message: 'a positive duration such as 1000, 500ms, 2s or 5m' });
      return z.NEVER;
    }
    return ms;
  });
const port = z.coerce.number({ error: 'a TCP port 0-65535' }).int('a TCP port 0-65535').min(0, 'a TCP port 0-65535').max(65535, 'a TCP port 0-65535');
const positiveInt = z.coerce.number({ error: 'a positive integer' }).int('a positive integer').positive('a positive integer');

/** The scheduler's configuration, parsed once at start; a bad value fails naming its variable. */
export const SchedulerEnv = z.object({
  REDIS_URL: z.string().regex(REDIS_URL_PATTERN, REDIS_URL_EXPECTED),
  TICKFLEET_STORE_URL: z.string().min(1).default('sqlite://.tickfleet/state.db'),
  /** Key prefix of queues and locks; the same for every role of one fleet. */
  TICKFLEET_PREFIX: z.string().regex(REDIS_PREFIX_PATTERN, REDIS_PREFIX_EXPECTED).default('tickfleet'),
  TICKFLEET_SCHEDULER_TICK_MS: duration.default(1000),
  TICKFLEET_SCHEDULER_BATCH: positiveInt.default(500),
  TICKFLEET_SCHEDULER_LEASE_MS: duration.default(300_000),
  TICKFLEET_SCHEDULER_LEADER_TTL_MS: duration.default(5000),
  /** How often the leader re-creates lost backfill units and missing queue concurrency from the store. */
  TICKFLEET_SCHEDULER_REPAIR_MS: duration.default(30_000),
  TICKFLEET_SCHEDULER_JITTER_MS: z.coerce.number({ error: 'a non-negative integer' }).int().min(0, 'a non-negative integer').default(1000),
  TICKFLEET_SCHEDULER_CLOSE_DELAY_MS: z.coerce.number({ error: 'a non-negative integer' }).int().min(0, 'a non-negative integer').default(2000),
  TICKFLEET_SCHEDULER_BOOK_EVERY_MS: duration.default(5000),
  TICKFLEET_SCHEDULER_TRADES_EVERY_MS: duration.default(60_000),
  TICKFLEET_SCHEDULER_DISCOVERY_EVERY_MS: duration.default(3_600_000),
  TICKFLEET_SCHEDULER_FILES_DELAY_MS: duration.default(3_600_000),
  /** Port of /metrics, /healthz, /readyz; `PORT` is read when this is unset. 0 picks a free port. */
  TICKFLEET_HEALTH_PORT: port.optional(),
  PORT: port.optional(),
  /**
   * Address of the health server. Loopback like every other role: /metrics and /status are not
   * for the network unless asked for (0.0.0.0 in a container, as the manifests set).
   */
  TICKFLEET_HEALTH_HOST: z.string().default('127.0.0.1'),
});
export type SchedulerEnv = z.infer<typeof SchedulerEnv>;

/** Parses the environment; the first bad variable becomes a ConfigError naming it and what was expected. */
export function parseSchedulerEnv(env: Record<string, string | undefined>): SchedulerEnv {
  // Empty strings count as unset, as shells and manifests often leave them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = SchedulerEnv.safeParse(cleaned);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = String(issue?.path[0] ?? 'environment');
  const expected = issue?.code === 'invalid_type' && cleaned[variable] === undefined ? `${variable} to be set` : (issue?.message ?? 'a valid value');
  throw new ConfigError(variable, expected);
}
