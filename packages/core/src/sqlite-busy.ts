/**
 * Runs `fn` again while it throws SQLite's `SQLITE_BUSY`, for up to `timeoutMs` (10 ms apart,
 * blocking: for the one-time steps of opening a database). Switching a database to WAL
 * (`PRAGMA journal_mode = WAL`) can answer BUSY at once, without calling the busy handler, while
 * another process opens or writes the same file; the busy timeout alone does not cover it.
 */
export function retryWhileBusySync<T>(fn: () => T, timeoutMs: number): T {
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

/**
 * SQLite's own busy wait per try on the fleet's shared files (state store and sink): 1 ms.
 * better-sqlite3 is synchronous, so SQLite's busy handler sleeps inside the call and stalls every
 * unit of the process; longer waits are tries with asynchronous pauses in between, during which
 * the process's other units go on. At 5 ms, four worker processes on one machine spent a quarter of
 * their time asleep in it (`strace -c -w` of `fleet-scale.ts`: 14.5 s of `clock_nanosleep` per
 * worker in 60 s) and two processes ran 20-30% slower than at 0 or 1 ms; at 0 one process waited
 * out every scheduler claim in asynchronous pauses of growing length and ran slower than at 1.
 */
export const SQLITE_ATTEMPT_BUSY_MS = 1;
