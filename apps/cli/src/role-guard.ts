import { cliEnv, type CliEnv } from './cli-env.js';

/** Set by `tickfleet up` on its roles: the pid they belong to; they stop when it is gone. */
export const PARENT_PID_ENV = 'TICKFLEET_PARENT_PID' satisfies keyof CliEnv;

/** Fails with one line (RedisUnavailableError) unless Redis answers within `connectRedis`'s bounded wait. */
export async function preflightRedis(url: string): Promise<void> {
  const { connectRedis } = await import('@tickfleet/queues');
  const client = await connectRedis(url, { blocking: false, connectionName: 'tickfleet-preflight' });
  await client.quit().catch(() => client.disconnect());
}

function exitWith(line: string, code: number): void {
  process.stderr.write(`tickfleet: ${line}\n`);
  process.exit(code);
}

/** What {@link guardRole} reads from the environment. */
export type RoleGuardEnv = Pick<CliEnv, typeof PARENT_PID_ENV | 'TICKFLEET_REDIS_GIVE_UP_MS'>;

/** The role guard's settings, parsed before the role starts so a bad value exits 2 before anything runs. */
export function roleGuardEnv(): RoleGuardEnv {
  return cliEnv(PARENT_PID_ENV, 'TICKFLEET_REDIS_GIVE_UP_MS');
}

/**
 * Keeps a started role honest about what it depends on: exits 1 with one line when its Redis has
 * been unreachable for TICKFLEET_REDIS_GIVE_UP_MS (default 60 s), and, under `tickfleet up`, stops
 * (SIGTERM to itself, so in-flight units are returned as on any shutdown) when `up` is gone — e.g.
 * killed with SIGKILL, which gives it no chance to stop its children.
 */
export async function guardRole(role: string, redisUrl: string, env: RoleGuardEnv): Promise<void> {
  const parent = env[PARENT_PID_ENV];
  const { watchRedis } = await import('@tickfleet/queues');
  watchRedis(redisUrl, { giveUpMs: env.TICKFLEET_REDIS_GIVE_UP_MS, onLost: (err) => exitWith(`${role}: ${err.message}; exiting`, 1) });
  if (parent !== undefined && parent > 1) {
    const timer = setInterval(() => {
      // Orphans are re-parented (to init or a subreaper), so a changed ppid means `up` died.
      if (process.ppid === parent) return;
      clearInterval(timer);
      process.stderr.write(`tickfleet: ${role}: tickfleet up (pid ${parent}) is gone; stopping\n`);
      process.kill(process.pid, 'SIGTERM');
    }, 500);
    timer.unref();
  }
}
