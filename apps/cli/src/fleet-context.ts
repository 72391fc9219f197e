import { existsSync, readFileSync } from 'node:fs';
import { DEFAULTS } from '@tickfleet/config';
import { ConfigError } from '@tickfleet/core';
import { cliEnv } from './cli-env.js';

/** Written by `tickfleet up` while it runs, so other commands find its private Redis. */
export const FLEET_FILE = '.tickfleet/fleet.json';

export interface FleetInfo {
  redisUrl: string;
  prefix: string;
  storeUrl?: string;
  sinkUrl?: string;
  mockVenueUrl?: string;
  dashboardUrl?: string;
  /** `/metrics` URL of each role, by role name (`scheduler`, `worker-0`, `dashboard`). */
  metrics?: Record<string, string>;
  pid?: number;
  /** Pids of the role processes `up` started (each leads its own process group). */
  rolePids?: Record<string, number>;
  /** Pid of the private redis-server `up` started (absent with an external REDIS_URL). */
  redisPid?: number;
}

/** The running fleet's Redis: `REDIS_URL`, else the one `tickfleet up` recorded in `.tickfleet/fleet.json`. */
export function fleetRedis(): { redisUrl: string; prefix: string } {
  // Checked before anything connects: a bad value must end the command with one line, not
  // leave an open connection retrying behind an error.
  const env = cliEnv('TICKFLEET_PREFIX', 'REDIS_URL');
  if (env.REDIS_URL) return { redisUrl: env.REDIS_URL, prefix: env.TICKFLEET_PREFIX ?? DEFAULTS.prefix };
  const info = readFleetInfo();
  if (info) return { redisUrl: info.redisUrl, prefix: info.prefix };
  throw new ConfigError('REDIS_URL', `the fleet's Redis URL (redis://host:port), or a running \`tickfleet up\` in this directory (${FLEET_FILE})`);
}

export function readFleetInfo(): FleetInfo | undefined {
  if (!existsSync(FLEET_FILE)) return undefined;
  try {
    const info = JSON.parse(readFileSync(FLEET_FILE, 'utf8')) as FleetInfo;
    if (info.pid !== undefined && !pidAlive(info.pid)) return undefined;
    return info;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid exists (one of another user's counts). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
