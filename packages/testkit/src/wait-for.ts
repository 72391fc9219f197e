import { WaitTimeoutError } from './testkit-error.js';

/** Polls `predicate` until it returns a truthy value or `timeoutMs` passes (then throws naming `what`). */
export async function waitFor<T>(
  predicate: () => Promise<T> | T,
  what: string,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await predicate();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new WaitTimeoutError(what, timeoutMs, `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/**
 * Waits, when the real clock is within `marginMs` of a minute's end, until that minute has ended:
 * for tests whose budget counts real clock minutes (MongoDB's `$$NOW`, Redis budgets) and that
 * expect several acquires to land in one window.
 */
export async function clearOfMinuteEnd(marginMs: number): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 60_000 - marginMs) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
}
