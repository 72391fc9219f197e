import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { listSegments, oldestReceivedAtMs } from '@tickfleet/sinks';

export interface SpoolDepth {
  dir: string;
  /** Non-empty segment files across the base directory and every worker slot under it. */
  segments: number;
  bytes: number;
  /** Receive time of the oldest spooled record, null when the spool is empty. */
  oldestReceivedAtMs: number | null;
  /** Directories holding at least one non-empty segment. */
  dirs: number;
}

/**
 * Spool depth of a machine: each worker process spools into its own `worker-<n>` slot under the
 * base directory (and a CLI replay may use the base itself), so all of them are summed.
 */
export function spoolDepth(baseDir: string): SpoolDepth {
  const dirs = [baseDir];
  try {
    for (const name of readdirSync(baseDir)) {
      const p = join(baseDir, name);
      if (statSync(p).isDirectory()) dirs.push(p);
    }
  } catch {
    // No spool directory yet: nothing spooled.
  }
  let segments = 0;
  let bytes = 0;
  let oldest: number | null = null;
  let used = 0;
  for (const dir of dirs) {
    const files = listSegments(dir).filter((s) => s.bytes > 0);
    if (files.length === 0) continue;
    used++;
    segments += files.length;
    bytes += files.reduce((n, s) => n + s.bytes, 0);
    const t = oldestReceivedAtMs(dir);
    if (t !== null && (oldest === null || t < oldest)) oldest = t;
  }
  return { dir: baseDir, segments, bytes, oldestReceivedAtMs: oldest, dirs: used };
}
