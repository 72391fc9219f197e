import { createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { pidAlive } from './fleet-context.js';

/** Held by the `tickfleet up` running in this directory (fleet-lock.ts). */
export const FLEET_LOCK_FILE = '.tickfleet/up.lock';

/** Who holds a lock file: its whole content, written before the file is linked into place. */
export interface LockHolder {
  pid: number;
  /** Random per process: tells this holder's file from one a later process with the same pid wrote. */
  nonce: string;
  /** The process's start time as the kernel counts it (Linux), so a reused pid is not taken for the holder; null elsewhere. */
  start: string | null;
}

/** `tickfleet up` refused: another one holds the directory. */
export class FleetRunningError extends Error {
  constructor(
    readonly holder: LockHolder,
    dashboardUrl: string | undefined,
  ) {
    super(
      `another \`tickfleet up\` runs in this directory (pid ${holder.pid}, dashboard ${dashboardUrl ?? 'not up yet'}): ` +
        `stop it first (Ctrl-C in its terminal, or kill ${holder.pid})`,
    );
    this.name = 'FleetRunningError';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One process per directory, without a lock server: the lock file is created whole and atomically
 * (written under a private name, then hard-linked into place, which fails when the name exists),
 * and names its holder. A holder that is gone (killed, crashed) leaves a stale file, which is
 * removed under a second lock named after that very holder: of the processes that find the same
 * stale file, one removes it and all race for the free name again, so two never get through. A
 * remover that dies leaves its own stale lock, broken the same way.
 */
export class FleetLock {
  private constructor(
    private readonly path: string,
    private readonly me: LockHolder,
  ) {}

  /**
   * Takes the lock at `path` for this process, or returns the live process holding it. `onStale`
   * runs when a stale holder was found, before anything is done about it (tests pause there to
   * interleave two takers deterministically).
   */
  static async acquire(path: string = FLEET_LOCK_FILE, options: { onStale?: (holder: LockHolder) => Promise<void> } = {}): Promise<FleetLock | LockHolder> {
    const me: LockHolder = { pid: process.pid, nonce: randomBytes(8).toString('hex'), start: processStart(process.pid) };
    const mine = `${path}.${me.pid}.${me.nonce}.tmp`;
    writeFileSync(mine, JSON.stringify(me), { flag: 'wx' });
    try {
      const holder = await take(path, mine, me, options.onStale);
      return holder ?? new FleetLock(path, me);
    } finally {
      unlinkQuietly(mine);
    }
  }

  /** Removes the lock file if it is still this process's. */
  release(): void {
    const holder = readHolder(this.path);
    if (holder && sameHolder(holder, this.me)) unlinkQuietly(this.path);
  }
}

/** Links `mine` to `path`; null once it is ours, else the live holder. */
async function take(path: string, mine: string, me: LockHolder, onStale?: (holder: LockHolder) => Promise<void>): Promise<LockHolder | null> {
  // Each turn either takes the name, finds a live holder, or waits for a live remover of a stale
  // one: only a chain of processes dying in the instant between two steps keeps this going.
  for (let turn = 0; turn < 200; turn++) {
    try {
      linkSync(mine, path);
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readHolder(path);
    if (!holder) continue; // removed meanwhile: try the name again
    if (sameHolder(holder, me)) return null;
    if (holderAlive(holder)) return holder;
    await onStale?.(holder);
    // Stale: only the taker of this lock, named after this very holder, may remove the file.
    const breakPath = `${path}.${holder.pid}-${holder.nonce}.break`;
    if ((await take(breakPath, mine, me, onStale)) !== null) {
      await sleep(20); // a live process is removing it
      continue;
    }
    try {
      const now = readHolder(path);
      if (now && sameHolder(now, holder)) unlinkQuietly(path);
    } finally {
      unlinkQuietly(breakPath);
    }
  }
  throw new Error(`could not take ${path}: it kept changing hands`);
}

/** The holder a lock file names; one that cannot be parsed counts as a dead holder identified by its content. */
function readHolder(path: string): LockHolder | undefined {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const h = JSON.parse(raw) as Partial<LockHolder>;
    if (Number.isInteger(h.pid) && typeof h.nonce === 'string') return { pid: h.pid!, nonce: h.nonce, start: typeof h.start === 'string' ? h.start : null };
  } catch {
    // not ours: handled below
  }
  return { pid: 0, nonce: createHash('sha256').update(raw).digest('hex').slice(0, 16), start: null };
}

function sameHolder(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.nonce === b.nonce;
}

function holderAlive(holder: LockHolder): boolean {
  if (holder.pid <= 0 || !pidAlive(holder.pid)) return false;
  // The pid lives; it is the holder unless its start time says another process got the pid (or,
  // where /proc is, the process ended meanwhile).
  if (holder.start === null) return true;
  const start = processStart(holder.pid);
  return start === null ? processStart(process.pid) === null : start === holder.start;
}

/** Field 22 of /proc/<pid>/stat (start time after boot, in clock ticks); null where there is no /proc. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
