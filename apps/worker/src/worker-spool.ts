import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, SpoolFullError, SpoolLockedError, systemClock } from '@tickfleet/core';
import { type PipelineMetrics, Spool, type SpoolOptions } from '@tickfleet/sinks';

const MAX_SLOTS = 64;

/**
 * Opens this process's spool: the first free `worker-<n>` directory under `baseDir`. A spool is
 * written by one live process at a time (its lock file holds the pid), so local workers each take
 * a slot, and a restarted worker takes over the slot of one that died, replaying what it left.
 *
 * A base directory that cannot hold a spool fails here with one typed error naming it and the
 * cause: ConfigError (TICKFLEET_SPOOL_DIR: not a directory, not writable) or SpoolFullError (its
 * disk has no room even for the lock file).
 */
export function openWorkerSpool(baseDir: string, options: Omit<SpoolOptions, 'dir'> = {}, metrics?: PipelineMetrics): Spool {
  usableBase(baseDir);
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    const dir = join(baseDir, `worker-${slot}`);
    try {
      return Spool.open({ ...options, dir }, metrics ? { metrics } : {});
    } catch (err) {
      // Held by another live process: try the next slot.
      if (err instanceof SpoolLockedError) continue;
      if (err instanceof SpoolFullError) {
        throw new SpoolFullError(err.dir, err.reason, err.retryAtMs, `${err.message}; free space there or set TICKFLEET_SPOOL_DIR to another volume`, {
          cause: err,
        });
      }
      throw new ConfigError('TICKFLEET_SPOOL_DIR', `a directory this worker can write a spool in (${dir}: ${describe(err)})`);
    }
  }
  throw new ConfigError('TICKFLEET_SPOOL_DIR', `a spool directory with a free slot (${baseDir}: ${MAX_SLOTS} live workers hold every worker-<n> slot)`);
}

/**
 * The spool and its replay as `/healthz` reports them: the segments holding records (sealed ones
 * and the one being written), and the replay's backlog (everything spooled waits to be replayed
 * into the sink; the replay seals the current segment once nothing older waits) with the age of
 * its oldest record. Memory reads plus, when the spool holds records, one read of the oldest
 * segment's head.
 */
export function spoolHealthz(spool: Spool, replayRunning: boolean) {
  const segments = spool.completeSegments().filter((s) => s.bytes > 0).length + (spool.currentBytes > 0 ? 1 : 0);
  return {
    spool: { dir: spool.dir, bytes: spool.totalBytes, maxBytes: spool.maxTotalBytes, maxSegmentBytes: spool.maxSegmentBytes, onFull: spool.onFull, segments },
    replay: { running: replayRunning, backlogSegments: segments, backlogBytes: spool.totalBytes, oldestAgeMs: spool.oldestAgeMs() },
  };
}

function usableBase(baseDir: string): void {
  let notADirectory = false;
  try {
    const st = statSync(baseDir, { throwIfNoEntry: false });
    if (!st) mkdirSync(baseDir, { recursive: true });
    notADirectory = st !== undefined && !st.isDirectory();
    if (!notADirectory) accessSync(baseDir, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      throw new SpoolFullError(
        baseDir,
        'disk',
        systemClock.now(),
        `cannot create spool directory ${baseDir}: no space left on its disk (${code}); free space there or set TICKFLEET_SPOOL_DIR to another volume`,
        { cause: err },
      );
    }
    throw new ConfigError('TICKFLEET_SPOOL_DIR', `a writable directory (${baseDir}: ${describe(err)})`);
  }
  if (notADirectory) throw new ConfigError('TICKFLEET_SPOOL_DIR', `a writable directory (${baseDir}: not a directory)`);
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ? `${e.code}${e.syscall ? ` on ${e.syscall}` : ''}` : e instanceof Error ? e.message : String(err);
}
