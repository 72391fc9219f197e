import { join } from 'node:path';
import { isTickfleetError } from '@tickfleet/core';
import { type PipelineMetrics, Spool, type SpoolOptions } from '@tickfleet/sinks';

const MAX_SLOTS = 64;

/**
 * Opens this process's spool: the first free `worker-<n>` directory under `baseDir`. A spool is
 * written by one live process at a time (its lock file holds the pid), so local workers each take
 * a slot, and a restarted worker takes over the slot of one that died, replaying what it left.
 */
export function openWorkerSpool(baseDir: string, options: Omit<SpoolOptions, 'dir'> = {}, metrics?: PipelineMetrics): Spool {
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    try {
      return Spool.open({ ...options, dir: join(baseDir, `worker-${slot}`) }, metrics ? { metrics } : {});
    } catch (err) {
      if (isTickfleetError(err) && err.code === 'E_CONFIG') continue;
      throw err;
    }
  }
  throw new Error(`no free spool slot under ${baseDir} (${MAX_SLOTS} live workers hold them all)`);
}
