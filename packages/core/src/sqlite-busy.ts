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
